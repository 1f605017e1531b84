<?php

/**
 * The plugin's core: settings (base URL, key from the VERDICT_API_KEY constant or an option,
 * flow step), the client (the WP HTTP API transport, failures as WP_Error), the WP-Cron
 * worker that hands claimed items to the verdict_process_item filter, and the Site Health
 * test that calls /readyz.
 */

declare(strict_types=1);

use Verdict\Decision;
use Verdict\JobContext;
use Verdict\Model\Claim;
use Verdict\WordPress\WpClient;
use Verdict\Worker;

final class Verdict_Pipeline
{
    public const OPTION = 'verdict_pipeline_settings';
    public const LAST_RUN = 'verdict_pipeline_last_run';
    public const CRON_HOOK = 'verdict_pipeline_work';
    public const SCHEDULE = 'verdict_pipeline_minute';

    private const DEFAULTS = [
        'base_url' => 'http://127.0.0.1:8080',
        'api_key' => '',
        'flow_step_id' => 'wordpress',
        'worker_id' => '',
        'batch' => 5,
        'max_items' => 50,
        'source_type' => 'wp_post',
        'reprocess_on_update' => false,
    ];

    public static function boot(): void
    {
        add_filter('cron_schedules', [self::class, 'schedules']);
        add_action(self::CRON_HOOK, [self::class, 'work']);
        add_filter('site_status_tests', [self::class, 'siteHealthTests']);
        add_filter('debug_information', [self::class, 'siteHealthInfo']);
        add_action('post_updated', [self::class, 'postUpdated'], 10, 3);
    }

    /**
     * The item a post is registered as: source type from the settings (wp_post), identifier
     * post-<ID>. Filter verdict_pipeline_item_for_post to match how your code registers posts,
     * or return null to leave the post out.
     *
     * @return array{source_type: string, item_identifier: string}|null
     */
    public static function itemForPost(WP_Post $post): ?array
    {
        $item = apply_filters('verdict_pipeline_item_for_post', ['source_type' => (string) self::setting('source_type'), 'item_identifier' => 'post-' . $post->ID], $post);
        return is_array($item) && isset($item['item_identifier']) ? $item : null;
    }

    /** What "the content changed" means: a hash of title, content and excerpt (filter verdict_pipeline_content_hash). */
    public static function contentHash(WP_Post $post): string
    {
        return (string) apply_filters('verdict_pipeline_content_hash', hash('sha256', $post->post_title . "\0" . $post->post_content . "\0" . $post->post_excerpt), $post);
    }

    /** "Reprocess on update" (off by default): a published post whose content hash changed is requeued in verdict. */
    public static function postUpdated(int $postId, WP_Post $after, WP_Post $before): void
    {
        if (
            !self::setting('reprocess_on_update') || $after->post_status !== 'publish' || $before->post_status !== 'publish'
            || wp_is_post_revision($postId) || wp_is_post_autosave($postId) || self::contentHash($after) === self::contentHash($before)
        ) {
            return;
        }
        $item = self::itemForPost($after);
        if ($item === null) {
            return;
        }
        $r = verdict_pipeline_reprocess($item['item_identifier'], $item['source_type'], 'the post changed in WordPress');
        if (is_wp_error($r) && $r->get_error_code() !== 'verdict_queued') {
            error_log('verdict-pipeline: reprocess of post ' . $postId . ': ' . $r->get_error_message());
        }
    }

    public static function activate(): void
    {
        Verdict_Pipeline_Outbox::install();
        add_filter('cron_schedules', [self::class, 'schedules']);
        if (!wp_next_scheduled(self::CRON_HOOK)) {
            wp_schedule_event(time(), self::SCHEDULE, self::CRON_HOOK);
        }
    }

    public static function deactivate(): void
    {
        wp_clear_scheduled_hook(self::CRON_HOOK);
        wp_clear_scheduled_hook(Verdict_Pipeline_Outbox::FLUSH_HOOK); // the outbox's rows stay: reactivation sends them
    }

    /** @param array<string, array<string, mixed>> $schedules */
    public static function schedules(array $schedules): array
    {
        $schedules[self::SCHEDULE] = ['interval' => 60, 'display' => __('Every minute (verdict pipeline)', 'verdict-pipeline')];
        return $schedules;
    }

    /** @return array<string, mixed> */
    public static function settings(): array
    {
        $saved = get_option(self::OPTION, []);
        return (is_array($saved) ? $saved : []) + self::DEFAULTS;
    }

    public static function setting(string $name): mixed
    {
        if ($name === 'api_key' && self::keyFromConstant()) {
            return (string) constant('VERDICT_API_KEY');
        }
        if ($name === 'base_url' && defined('VERDICT_BASE_URL')) {
            return (string) constant('VERDICT_BASE_URL');
        }
        if ($name === 'worker_id' && (string) (self::settings()['worker_id'] ?? '') === '') {
            return 'wp@' . (wp_parse_url(home_url(), PHP_URL_HOST) ?: 'site');
        }
        return self::settings()[$name] ?? null;
    }

    public static function keyFromConstant(): bool
    {
        return defined('VERDICT_API_KEY') && (string) constant('VERDICT_API_KEY') !== '';
    }

    /** The client, or a WP_Error when the plugin is not configured or the library is missing. */
    public static function client(?float $timeout = null): WpClient|WP_Error
    {
        if (!class_exists(WpClient::class)) {
            return new WP_Error('verdict_missing_client', __('The verdict PHP client (verdict/client) is not installed.', 'verdict-pipeline'));
        }
        $url = (string) self::setting('base_url');
        if ($url === '') {
            return new WP_Error('verdict_not_configured', __('Set the verdict base URL under Settings -> verdict pipeline.', 'verdict-pipeline'));
        }
        // an editor's request waits $timeout at most, once: the outbox tries again later
        $opts = $timeout !== null ? ['timeout' => $timeout, 'connect_timeout' => $timeout, 'max_retries' => 0, 'retry_budget' => $timeout]
            : ['timeout' => 15.0, 'retry_budget' => 20.0];
        return WpClient::create($url, (string) self::setting('api_key') ?: null, $opts);
    }

    /**
     * The WP-Cron job: claim items of the flow step and let the verdict_process_item filter
     * decide each one. A filter returns a \Verdict\Decision, an array such as
     * ['disposition' => 'reject_source', 'reason_code' => 'spam'], a WP_Error (a retryable
     * failure) or null (nobody decided: the claim is released, no budget spent).
     */
    public static function work(): void
    {
        Verdict_Pipeline_Outbox::flush(); // what waits in the outbox first: its items may be claimed in this run
        $client = self::client();
        if (is_wp_error($client)) {
            update_option(self::LAST_RUN, ['at' => time(), 'error' => $client->get_error_message()], false);
            return;
        }
        $worker = new Worker(
            $client->client(),
            (string) self::setting('flow_step_id'),
            (string) self::setting('worker_id'),
            // dispose-and-claim-next: the last disposition of a batch claims the next batch
            ['limit' => (int) self::setting('batch'), 'safety_margin' => 10.0, 'claim_next' => true]
        );
        try {
            $report = $worker->run([self::class, 'processItem'], (int) self::setting('max_items'));
            $last = ['at' => time(), 'claimed' => $report->claimed, 'dispositions' => $report->dispositions,
                'released_for_time' => $report->releasedForTime, 'errors' => $report->errors];
        } catch (\Verdict\Exception\VerdictException $e) {
            $last = ['at' => time(), 'error' => $e->getMessage()];
        }
        update_option(self::LAST_RUN, $last, false);
        do_action('verdict_pipeline_worked', $last);
    }

    /** @return Decision|array<string, mixed>|null */
    public static function processItem(Claim $claim, JobContext $ctx): Decision|array|null
    {
        $item = [
            'id' => $claim->item->id,
            'job_id' => $claim->jobId,
            'attempt' => $claim->attempt,
            'flow_step_id' => $claim->item->flowStepId,
            'source_type' => $claim->item->sourceType,
            'item_identifier' => $claim->item->itemIdentifier,
            'payload' => $claim->item->payload,
        ];
        /**
         * Decide one claimed item. $ctx->toolFailure($tool, $args, $error, $kind, $required)
         * reports a failed tool (verdict answers the envelope for the model),
         * $ctx->heartbeat() keeps a long job's lease, $ctx->timeLeft() is the PHP time left.
         * Model usage goes with the disposition: $ctx->reportUsage($in, $out, $cost, $model)
         * after each model call, or a 'usage' member in the decision (verdict's input_tokens /
         * output_tokens, or a model API's own usage object: prompt_tokens / completion_tokens).
         *
         * @param Decision|array|WP_Error|null $decision
         */
        $decision = apply_filters('verdict_process_item', null, $item, $ctx);
        if (is_wp_error($decision)) {
            return Decision::fail($decision->get_error_code() . ': ' . $decision->get_error_message(), true);
        }
        if (is_array($decision) && is_array($decision['usage'] ?? null)) {
            $decision['usage'] = self::usage($decision['usage']);
        }
        return $decision;
    }

    /**
     * A model call's usage as verdict takes it: input_tokens / output_tokens (Anthropic's and
     * verdict's names) or prompt_tokens / completion_tokens (OpenAI's), with cost_usd and
     * model when given.
     *
     * @param array<string, mixed> $u
     * @return array<string, mixed>
     */
    public static function usage(array $u): array
    {
        return \Verdict\Client::usage(
            (int) ($u['input_tokens'] ?? $u['prompt_tokens'] ?? 0),
            (int) ($u['output_tokens'] ?? $u['completion_tokens'] ?? 0),
            isset($u['cost_usd']) ? (float) $u['cost_usd'] : null,
            isset($u['model']) ? (string) $u['model'] : null
        );
    }

    /** @param array<string, array<string, mixed>> $tests */
    public static function siteHealthTests(array $tests): array
    {
        $tests['direct']['verdict_readyz'] = ['label' => __('verdict is ready', 'verdict-pipeline'), 'test' => [self::class, 'siteHealthReadyz']];
        $tests['direct']['verdict_outbox'] = ['label' => __('verdict outbox', 'verdict-pipeline'), 'test' => [self::class, 'siteHealthOutbox']];
        return $tests;
    }

    /** @return array<string, mixed> good while nothing has waited in the outbox for more than 15 minutes */
    public static function siteHealthOutbox(): array
    {
        $o = Verdict_Pipeline_Outbox::summary();
        $age = $o['oldest_at'] !== null ? time() - $o['oldest_at'] : 0;
        $result = [
            'label' => __('Registrations reach verdict', 'verdict-pipeline'),
            'status' => 'good',
            'badge' => ['label' => 'verdict', 'color' => 'blue'],
            'description' => '<p>' . esc_html(sprintf(_n('%d registration waits in the outbox.', '%d registrations wait in the outbox.', $o['pending'], 'verdict-pipeline'), $o['pending'])) . '</p>',
            'actions' => '',
            'test' => 'verdict_outbox',
        ];
        if ($age > Verdict_Pipeline_Outbox::STALE_AFTER) {
            $result['status'] = 'recommended';
            $result['badge']['color'] = 'orange';
            $result['label'] = __('Registrations have waited in the verdict outbox for more than 15 minutes', 'verdict-pipeline');
            $result['description'] = '<p>' . esc_html(sprintf(
                __('%1$d waiting, the oldest for %2$s. Last error: %3$s', 'verdict-pipeline'),
                $o['pending'],
                human_time_diff((int) $o['oldest_at']),
                $o['last_error'] ?? '-'
            )) . '</p><p>' . esc_html__('Nothing is lost: WP-Cron sends them once verdict answers. Check that verdict runs and that WP-Cron runs.', 'verdict-pipeline') . '</p>';
            $result['actions'] = '<a href="' . esc_url(admin_url('tools.php?page=verdict-pipeline')) . '">' . esc_html__('Tools -> verdict', 'verdict-pipeline') . '</a>';
        }
        return $result;
    }

    /**
     * Site Health -> Info: a verdict section.
     *
     * @param array<string, array<string, mixed>> $info
     */
    public static function siteHealthInfo(array $info): array
    {
        $o = Verdict_Pipeline_Outbox::summary();
        $last = get_option(self::LAST_RUN);
        $role = 'unknown';
        $client = self::client();
        if (!is_wp_error($client)) {
            $role = Verdict_Pipeline_Admin::capabilities($client)['role'];
        }
        $fmt = static fn (?int $t): string => $t ? wp_date('Y-m-d H:i:s', $t) : __('never', 'verdict-pipeline');
        $info['verdict-pipeline'] = [
            'label' => __('verdict pipeline', 'verdict-pipeline'),
            'fields' => [
                'base_url' => ['label' => __('Base URL', 'verdict-pipeline'), 'value' => (string) self::setting('base_url')],
                'key' => ['label' => __('API key', 'verdict-pipeline'), 'value' => self::keyFromConstant() ? __('from VERDICT_API_KEY', 'verdict-pipeline')
                    : ((string) self::setting('api_key') !== '' ? __('stored in the settings', 'verdict-pipeline') : __('none', 'verdict-pipeline')), 'private' => true],
                'role' => ['label' => __('Key role', 'verdict-pipeline'), 'value' => $role],
                'flow_step' => ['label' => __('Flow step', 'verdict-pipeline'), 'value' => (string) self::setting('flow_step_id')],
                'reprocess_on_update' => ['label' => __('Reprocess on update', 'verdict-pipeline'), 'value' => self::setting('reprocess_on_update') ? 'on' : 'off'],
                'outbox' => ['label' => __('Outbox', 'verdict-pipeline'), 'value' => ($o['pending'] > 0
                    ? sprintf(__('%1$d waiting (the oldest since %2$s); last error: %3$s', 'verdict-pipeline'), $o['pending'], $fmt($o['oldest_at']), $o['last_error'] ?? '-')
                    : __('empty', 'verdict-pipeline')) . ($o['failed'] > 0 ? '; ' . sprintf(__('%d refused by verdict', 'verdict-pipeline'), $o['failed']) : '')],
                'outbox_last_error' => ['label' => __('Outbox: last failed send', 'verdict-pipeline'), 'value' => $o['last_error_at'] ? $fmt($o['last_error_at']) . ': ' . ($o['last_error'] ?? '') : __('never', 'verdict-pipeline')],
                'last_cron_run' => ['label' => __('Last cron run', 'verdict-pipeline'), 'value' => is_array($last) ? $fmt((int) $last['at']) . (isset($last['error']) ? ': ' . $last['error'] : '') : __('never', 'verdict-pipeline')],
                'scheduler' => ['label' => __('Outbox resends by', 'verdict-pipeline'), 'value' => function_exists('as_enqueue_async_action') ? 'Action Scheduler' : 'WP-Cron'],
            ],
        ];
        return $info;
    }

    /** @return array<string, mixed> the Site Health result of GET /readyz */
    public static function siteHealthReadyz(): array
    {
        $result = [
            'label' => __('verdict answers and its database is ready', 'verdict-pipeline'),
            'status' => 'good',
            'badge' => ['label' => 'verdict', 'color' => 'blue'],
            'description' => '<p>' . esc_html(sprintf(__('GET %s/readyz answered ready.', 'verdict-pipeline'), (string) self::setting('base_url'))) . '</p>',
            'actions' => '',
            'test' => 'verdict_readyz',
        ];
        $client = self::client();
        $ready = is_wp_error($client) ? $client : $client->readyz();
        if (is_wp_error($ready)) {
            $result['status'] = 'critical';
            $result['label'] = __('verdict is not reachable or not ready', 'verdict-pipeline');
            $result['description'] = '<p>' . esc_html($ready->get_error_message()) . '</p>';
            $result['actions'] = '<a href="' . esc_url(admin_url('options-general.php?page=verdict-pipeline-settings')) . '">' . esc_html__('verdict settings', 'verdict-pipeline') . '</a>';
        }
        return $result;
    }
}
