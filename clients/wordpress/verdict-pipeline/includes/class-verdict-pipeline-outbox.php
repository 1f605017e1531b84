<?php

/**
 * The outbox: every registration (and every reprocess request) is written to the site's own
 * database first, in table {prefix}verdict_outbox, and only then sent to verdict, with a short
 * timeout when an editor is waiting. What could not be sent stays in the table; WP-Cron (or an
 * Action Scheduler action when that plugin is active) sends it later, oldest first, with a
 * growing pause after each failed attempt. Each row keeps the Idempotency-Key it was first
 * sent with, so a send whose answer was lost is replayed by verdict, not applied twice (and a
 * registration is idempotent by its identifier anyway).
 */

declare(strict_types=1);

use Verdict\Exception\ConflictException;
use Verdict\Exception\InvalidRequestException;
use Verdict\Exception\NotFoundException;
use Verdict\Exception\VerdictException;
use Verdict\Client;

final class Verdict_Pipeline_Outbox
{
    public const DB_VERSION = '1';
    public const DB_VERSION_OPTION = 'verdict_pipeline_outbox_db';
    public const STATE_OPTION = 'verdict_pipeline_outbox_state';
    public const FLUSH_HOOK = 'verdict_pipeline_flush_outbox';
    private const LOCK_OPTION = 'verdict_pipeline_outbox_lock';
    /** The longest an editor's request waits for verdict, in seconds. */
    public const REQUEST_TIMEOUT = 1.0;
    /** The pause after the first failed resend; it doubles per failure up to MAX_BACKOFF. */
    public const BASE_BACKOFF = 30;
    public const MAX_BACKOFF = 900;
    /** Site Health warns when the oldest waiting row is older than this, in seconds. */
    public const STALE_AFTER = 900;

    public static function table(): string
    {
        global $wpdb;
        return $wpdb->prefix . 'verdict_outbox';
    }

    public static function boot(): void
    {
        add_action(self::FLUSH_HOOK, [self::class, 'flush']);
        add_action('plugins_loaded', [self::class, 'maybeInstall']);
    }

    /** Creates or upgrades the table (activation, and after an update without reactivation). */
    public static function install(): void
    {
        global $wpdb;
        require_once ABSPATH . 'wp-admin/includes/upgrade.php';
        $charset = $wpdb->get_charset_collate();
        dbDelta('CREATE TABLE ' . self::table() . " (
  id bigint(20) unsigned NOT NULL AUTO_INCREMENT,
  op varchar(16) NOT NULL DEFAULT 'register',
  body longtext NOT NULL,
  idempotency_key char(36) NOT NULL,
  status varchar(16) NOT NULL DEFAULT 'pending',
  created_at bigint(20) NOT NULL,
  attempts int(11) NOT NULL DEFAULT 0,
  last_attempt_at bigint(20) DEFAULT NULL,
  last_error text,
  PRIMARY KEY  (id),
  KEY status_id (status,id)
) $charset;");
        update_option(self::DB_VERSION_OPTION, self::DB_VERSION);
    }

    public static function maybeInstall(): void
    {
        if (get_option(self::DB_VERSION_OPTION) !== self::DB_VERSION) {
            self::install();
        }
    }

    /**
     * Writes one operation to the outbox and, when nothing older waits, sends it now with the
     * short timeout. Answers verdict's result when it was sent, a WP_Error `verdict_queued`
     * (data: outbox_id, cause) when it waits in the outbox, or the WP_Error of a refusal that
     * sending again cannot cure (invalid items: nothing is kept).
     *
     * @param array<string, mixed> $body
     */
    public static function submit(string $op, array $body): mixed
    {
        global $wpdb;
        self::maybeInstall();
        $key = Client::uuid();
        $older = self::pendingCount() > 0;
        $ok = $wpdb->insert(self::table(), ['op' => $op, 'body' => wp_json_encode($body), 'idempotency_key' => $key,
            'status' => 'pending', 'created_at' => time()], ['%s', '%s', '%s', '%s', '%d']);
        if ($ok === false) {
            return new WP_Error('verdict_outbox_write', sprintf(__('The verdict outbox could not be written: %s', 'verdict-pipeline'), $wpdb->last_error));
        }
        $id = (int) $wpdb->insert_id;
        if ($older) {
            // keep the order: what waits goes first, so this one waits too (and the editor does not)
            self::scheduleFlush();
            return self::queued($id, __('older registrations are waiting in the outbox', 'verdict-pipeline'));
        }
        $client = Verdict_Pipeline::client(self::REQUEST_TIMEOUT);
        if (is_wp_error($client)) {
            self::recordFailure($id, $client->get_error_message());
            self::scheduleFlush();
            return self::queued($id, $client->get_error_message());
        }
        try {
            $result = self::send($client->client(), $op, $body, $key, $id);
        } catch (VerdictException $e) {
            if (self::isPermanent($e)) {
                $wpdb->delete(self::table(), ['id' => $id], ['%d']);
                return \Verdict\WordPress\WpClient::toWpError($e);
            }
            self::recordFailure($id, $e->getMessage());
            self::scheduleFlush();
            return self::queued($id, $e->getMessage());
        }
        $wpdb->delete(self::table(), ['id' => $id], ['%d']);
        return $result;
    }

    private static function queued(int $id, string $cause): WP_Error
    {
        return new WP_Error(
            'verdict_queued',
            sprintf(__('verdict did not take it now (%s); it waits in the outbox and is sent again by WP-Cron.', 'verdict-pipeline'), $cause),
            ['outbox_id' => $id, 'cause' => $cause]
        );
    }

    /**
     * One send. register: POST /v1/items with the row's Idempotency-Key; fires
     * verdict_pipeline_registered($items, $registered, $outbox_id). reprocess: the item by its
     * identifier, requeued; an item verdict does not know yet is registered instead.
     *
     * @param array<string, mixed> $body
     */
    private static function send(Client $c, string $op, array $body, string $key, int $outboxId = 0): mixed
    {
        if ($op === 'reprocess') {
            $item = $c->requeueByIdentifier(
                (string) $body['flow_step_id'],
                (string) $body['source_type'],
                (string) $body['item_identifier'],
                (string) ($body['reason'] ?? 'reprocess requested by WordPress')
            );
            if ($item === null) {
                throw new NotFoundException(sprintf('verdict knows no item %s of %s', $body['item_identifier'], $body['flow_step_id']), 'not_found', false, null, null, 404);
            }
            do_action('verdict_pipeline_reprocessed', $body, $item, $outboxId);
            return $item;
        }
        $registered = $c->registerItems($body['items'], $key);
        /**
         * The items reached verdict: in the editor's request or later from the outbox
         * ($outboxId is the row either way). $registered lists RegisteredItem in the order of
         * $items; store the ids here when you keep them (e.g. in post meta).
         */
        do_action('verdict_pipeline_registered', $body['items'], $registered, $outboxId);
        return $registered;
    }

    /** A refusal that sending again will not cure: the items themselves are invalid, or the item is unknown. */
    private static function isPermanent(VerdictException $e): bool
    {
        return $e instanceof InvalidRequestException || $e instanceof NotFoundException;
    }

    private static function recordFailure(int $id, string $error): void
    {
        global $wpdb;
        $wpdb->query($wpdb->prepare(
            'UPDATE ' . self::table() . ' SET attempts = attempts + 1, last_attempt_at = %d, last_error = %s WHERE id = %d',
            time(),
            $error,
            $id
        ));
    }

    /**
     * Ask for a flush at $at (now by default): an Action Scheduler action when that plugin is
     * active, else a WP-Cron single event. (The minute's worker event flushes too.)
     */
    public static function scheduleFlush(?int $at = null): void
    {
        $at ??= time();
        if (function_exists('as_schedule_single_action')) {
            if (!function_exists('as_has_scheduled_action') || !as_has_scheduled_action(self::FLUSH_HOOK, [], 'verdict-pipeline')) {
                as_schedule_single_action($at, self::FLUSH_HOOK, [], 'verdict-pipeline');
            }
            return;
        }
        if (!wp_next_scheduled(self::FLUSH_HOOK)) {
            wp_schedule_single_event($at, self::FLUSH_HOOK);
        }
    }

    /**
     * Sends what waits, oldest first, until verdict does not take one (then it stops, keeping
     * the order, and pauses BASE_BACKOFF seconds, doubling per failed flush up to MAX_BACKOFF).
     * A row verdict refuses for good (invalid items, unknown item) is kept as `failed` and
     * skipped. $force ignores the pause. Answers how many rows were sent.
     */
    public static function flush(bool $force = false): int
    {
        global $wpdb;
        $state = self::state();
        if (!$force && time() < $state['next_attempt_at']) {
            self::scheduleFlush($state['next_attempt_at']); // unless a resend is scheduled already
            return 0;
        }
        if (!self::lock()) {
            return 0;
        }
        $sent = 0;
        try {
            $client = Verdict_Pipeline::client();
            $rows = $wpdb->get_results($wpdb->prepare('SELECT * FROM ' . self::table() . " WHERE status = 'pending' ORDER BY id LIMIT %d", 200), ARRAY_A);
            foreach ($rows ?: [] as $row) {
                $error = is_wp_error($client) ? $client->get_error_message() : null;
                if ($error === null) {
                    try {
                        self::send($client->client(), (string) $row['op'], (array) json_decode((string) $row['body'], true), (string) $row['idempotency_key'], (int) $row['id']);
                        $wpdb->delete(self::table(), ['id' => (int) $row['id']], ['%d']);
                        $sent++;
                        continue;
                    } catch (VerdictException $e) {
                        if (self::isPermanent($e)) {
                            self::recordFailure((int) $row['id'], $e->getMessage());
                            $wpdb->update(self::table(), ['status' => 'failed'], ['id' => (int) $row['id']]);
                            continue;
                        }
                        if ($e instanceof ConflictException && $row['op'] === 'reprocess') {
                            self::recordFailure((int) $row['id'], $e->getMessage()); // claimed now: the next flush tries again
                            continue;
                        }
                        $error = $e->getMessage();
                    }
                }
                self::recordFailure((int) $row['id'], $error);
                $failures = $state['failures'] + 1;
                $pause = min(self::MAX_BACKOFF, self::BASE_BACKOFF * 2 ** min(10, $failures - 1));
                self::saveState(['failures' => $failures, 'next_attempt_at' => time() + $pause, 'last_error' => $error, 'last_error_at' => time(),
                    'last_flush_at' => time()]);
                self::scheduleFlush(time() + $pause);
                return $sent;
            }
            self::saveState(['failures' => 0, 'next_attempt_at' => 0, 'last_flush_at' => time()] + $state);
        } finally {
            delete_option(self::LOCK_OPTION);
        }
        return $sent;
    }

    /** One flush at a time: add_option is refused while the option exists; a stale lock (2 min) is taken over. */
    private static function lock(): bool
    {
        if (add_option(self::LOCK_OPTION, time(), '', false)) {
            return true;
        }
        $at = (int) get_option(self::LOCK_OPTION, 0);
        if ($at < time() - 120) {
            update_option(self::LOCK_OPTION, time(), false);
            return true;
        }
        return false;
    }

    /** @return array{failures: int, next_attempt_at: int, last_error: ?string, last_error_at: ?int, last_flush_at: ?int} */
    public static function state(): array
    {
        $s = get_option(self::STATE_OPTION, []);
        $s = is_array($s) ? $s : [];
        return [
            'failures' => (int) ($s['failures'] ?? 0),
            'next_attempt_at' => (int) ($s['next_attempt_at'] ?? 0),
            'last_error' => isset($s['last_error']) ? (string) $s['last_error'] : null,
            'last_error_at' => isset($s['last_error_at']) ? (int) $s['last_error_at'] : null,
            'last_flush_at' => isset($s['last_flush_at']) ? (int) $s['last_flush_at'] : null,
        ];
    }

    /** @param array<string, mixed> $s */
    private static function saveState(array $s): void
    {
        update_option(self::STATE_OPTION, $s + self::state(), false);
    }

    public static function pendingCount(): int
    {
        global $wpdb;
        $wpdb->suppress_errors(true);
        $n = $wpdb->get_var('SELECT COUNT(*) FROM ' . self::table() . " WHERE status = 'pending'");
        $wpdb->suppress_errors(false);
        return (int) $n;
    }

    /**
     * What Tools -> verdict and Site Health show.
     *
     * @return array{pending: int, failed: int, oldest_at: ?int, last_error: ?string, last_error_at: ?int, next_attempt_at: int, last_flush_at: ?int}
     */
    public static function summary(): array
    {
        global $wpdb;
        $rows = $wpdb->get_results('SELECT status, COUNT(*) AS n, MIN(created_at) AS oldest FROM ' . self::table() . ' GROUP BY status', ARRAY_A) ?: [];
        $by = array_column($rows, null, 'status');
        $state = self::state();
        $lastError = $wpdb->get_var('SELECT last_error FROM ' . self::table() . " WHERE last_error IS NOT NULL ORDER BY last_attempt_at DESC, id DESC LIMIT 1");
        return [
            'pending' => (int) ($by['pending']['n'] ?? 0),
            'failed' => (int) ($by['failed']['n'] ?? 0),
            'oldest_at' => isset($by['pending']) ? (int) $by['pending']['oldest'] : null,
            'last_error' => $lastError !== null ? (string) $lastError : $state['last_error'],
            'last_error_at' => $state['last_error_at'],
            'next_attempt_at' => $state['next_attempt_at'],
            'last_flush_at' => $state['last_flush_at'],
        ];
    }

    /** @return list<array<string, mixed>> the rows that wait or failed, oldest first */
    public static function rows(int $limit = 20): array
    {
        global $wpdb;
        return $wpdb->get_results($wpdb->prepare('SELECT id, op, body, status, created_at, attempts, last_error FROM ' . self::table() . ' ORDER BY id LIMIT %d', $limit), ARRAY_A) ?: [];
    }
}
