<?php

/**
 * The plugin's admin screens: Settings -> verdict pipeline (base URL, key, flow step, worker
 * sizes, source type, reprocess on update) and Tools -> verdict (the outbox, the flow step's
 * summary and last cron run, and the item list: Verdict_Pipeline_List_Table). Every action
 * (requeue, resolve, release, one item or in bulk; send the outbox now; reprocess a post) goes
 * through a confirmation screen or a nonce-checked link, and checks manage_options. An item a
 * model parked with a question (request_review) shows the question and an Answer action: the
 * editor's decision (retry with an answer, processed, rejected) goes to POST /v1/items/{id}/review.
 */

declare(strict_types=1);

use Verdict\WordPress\WpClient;

final class Verdict_Pipeline_Admin
{
    public const PAGE = 'verdict-pipeline';
    public const SETTINGS_PAGE = 'verdict-pipeline-settings';
    public const CONFIRM_NONCE = 'verdict_pipeline_confirm';
    private const CAPS_TRANSIENT = 'verdict_pipeline_caps';
    /** What each action does, for the confirmation screen and the notices. */
    private const OPS = ['requeue', 'release', 'resolve_processed', 'resolve_rejected', 'answer'];
    /** An editor's decisions on a model's question. */
    private const DECISIONS = ['retry', 'processed', 'rejected'];

    public static function boot(): void
    {
        add_action('admin_menu', [self::class, 'menus']);
        add_action('admin_init', [self::class, 'registerSettings']);
        add_action('admin_post_verdict_pipeline_action', [self::class, 'handleAction']);
        add_action('admin_post_verdict_pipeline_flush', [self::class, 'handleFlush']);
        add_action('admin_post_verdict_pipeline_reprocess_post', [self::class, 'handleReprocessPost']);
        add_filter('post_row_actions', [self::class, 'postRowActions'], 10, 2);
        add_filter('page_row_actions', [self::class, 'postRowActions'], 10, 2);
        add_action('admin_notices', [self::class, 'postNotice']);
        add_action('admin_head-tools_page_' . self::PAGE, [self::class, 'styles']);
        add_filter('set_screen_option_verdict_pipeline_per_page', static fn ($keep, string $option, $value) => max(1, min(100, (int) $value)), 10, 3);
    }

    /** A few widths for the item list (no stylesheet file to load). */
    public static function styles(): void
    {
        echo '<style>.verdict-pipeline .column-item{width:22%}.verdict-pipeline .column-reason{width:24%}.verdict-pipeline .column-log{width:18%}.verdict-pipeline .column-state{width:9em}.verdict-pipeline .column-budgets{width:8em}'
            . '.verdict-pipeline .column-updated{width:10em}.verdict-log ol{margin:.5em 0 0 1.5em}.verdict-log li{margin:0 0 .25em}'
            . '.verdict-log time{color:#646970;font-variant-numeric:tabular-nums}.verdict-confirm{max-width:40em}.verdict-question{margin:.25em 0;padding:.25em .5em;border-left:3px solid #dba617;background:#fcf9e8}'
            . '.verdict-confirm textarea{width:100%}</style>';
    }

    /** A link into verdict's operator console (VERDICT_CONSOLE_URL when it is not at the base URL). */
    public static function consoleUrl(string $fragment = ''): string
    {
        $base = defined('VERDICT_CONSOLE_URL') ? (string) constant('VERDICT_CONSOLE_URL') : rtrim((string) Verdict_Pipeline::setting('base_url'), '/') . '/ui/';
        return $base . $fragment;
    }

    public static function menus(): void
    {
        $hook = add_management_page(__('verdict', 'verdict-pipeline'), __('verdict', 'verdict-pipeline'), 'manage_options', self::PAGE, [self::class, 'renderTools']);
        if ($hook) {
            // Screen Options -> "Items per page", as on WordPress's own lists
            add_action('load-' . $hook, static function (): void {
                add_screen_option('per_page', ['label' => __('Items per page', 'verdict-pipeline'), 'default' => 20, 'option' => 'verdict_pipeline_per_page']);
            });
        }
        add_options_page(__('verdict pipeline', 'verdict-pipeline'), __('verdict pipeline', 'verdict-pipeline'), 'manage_options', self::SETTINGS_PAGE, [self::class, 'renderSettings']);
    }

    public static function registerSettings(): void
    {
        register_setting('verdict_pipeline', Verdict_Pipeline::OPTION, ['type' => 'array', 'sanitize_callback' => [self::class, 'sanitize']]);
    }

    /** @param mixed $in @return array<string, mixed> */
    public static function sanitize($in): array
    {
        $in = is_array($in) ? $in : [];
        $old = Verdict_Pipeline::settings();
        delete_transient(self::CAPS_TRANSIENT);
        return [
            'base_url' => esc_url_raw(trim((string) ($in['base_url'] ?? $old['base_url']))),
            // an empty field keeps the stored key (the form never shows it)
            'api_key' => ($k = trim((string) ($in['api_key'] ?? ''))) !== '' ? $k : (string) $old['api_key'],
            'flow_step_id' => sanitize_text_field((string) ($in['flow_step_id'] ?? $old['flow_step_id'])),
            'worker_id' => sanitize_text_field((string) ($in['worker_id'] ?? $old['worker_id'])),
            'batch' => max(1, min(100, (int) ($in['batch'] ?? $old['batch']))),
            'max_items' => max(1, min(1000, (int) ($in['max_items'] ?? $old['max_items']))),
            'source_type' => sanitize_key((string) ($in['source_type'] ?? $old['source_type'])) ?: 'wp_post',
            'reprocess_on_update' => !empty($in['reprocess_on_update']),
        ];
    }

    public static function renderSettings(): void
    {
        if (!current_user_can('manage_options')) {
            return;
        }
        $s = Verdict_Pipeline::settings();
        $name = Verdict_Pipeline::OPTION;
        echo '<div class="wrap"><h1>' . esc_html__('verdict pipeline', 'verdict-pipeline') . '</h1><form method="post" action="options.php">';
        settings_fields('verdict_pipeline');
        echo '<table class="form-table" role="presentation">';
        self::field($name, 'base_url', __('verdict base URL', 'verdict-pipeline'), (string) Verdict_Pipeline::setting('base_url'), 'url', defined('VERDICT_BASE_URL'));
        echo '<tr><th scope="row"><label for="verdict-api-key">' . esc_html__('API key', 'verdict-pipeline') . '</label></th><td>';
        if (Verdict_Pipeline::keyFromConstant()) {
            echo '<p>' . esc_html__('Set by the VERDICT_API_KEY constant in wp-config.php.', 'verdict-pipeline') . '</p>';
        } else {
            echo '<input type="password" id="verdict-api-key" name="' . esc_attr($name) . '[api_key]" value="" autocomplete="off" class="regular-text" placeholder="' . esc_attr($s['api_key'] !== '' ? __('(stored; type to replace)', 'verdict-pipeline') : '') . '">';
            echo '<p class="description">' . esc_html__('Better: define VERDICT_API_KEY in wp-config.php, so the key is not stored in the database.', 'verdict-pipeline') . '</p>';
        }
        echo '</td></tr>';
        self::field($name, 'flow_step_id', __('Flow step', 'verdict-pipeline'), (string) $s['flow_step_id']);
        self::field($name, 'worker_id', __('Worker id', 'verdict-pipeline'), (string) $s['worker_id']);
        self::field($name, 'batch', __('Items per claim', 'verdict-pipeline'), (string) $s['batch'], 'number');
        self::field($name, 'max_items', __('Items per cron run', 'verdict-pipeline'), (string) $s['max_items'], 'number');
        self::field($name, 'source_type', __('Source type of posts', 'verdict-pipeline'), (string) $s['source_type']);
        echo '<tr><th scope="row">' . esc_html__('Reprocess on update', 'verdict-pipeline') . '</th><td><label><input type="checkbox" id="verdict-reprocess-on-update" name="'
            . esc_attr($name) . '[reprocess_on_update]" value="1"' . checked((bool) $s['reprocess_on_update'], true, false) . '> '
            . esc_html__('Requeue a published post\'s item in verdict when its title, content or excerpt changes', 'verdict-pipeline') . '</label>'
            . '<p class="description">' . esc_html__('Off by default: an edited post that verdict has processed is left as it is (registration is idempotent). The item is found as source type + "post-<ID>"; needs an admin key.', 'verdict-pipeline') . '</p></td></tr>';
        echo '</table>';
        submit_button();
        echo '</form></div>';
    }

    private static function field(string $option, string $key, string $label, string $value, string $type = 'text', bool $readonly = false): void
    {
        $id = 'verdict-' . str_replace('_', '-', $key);
        printf(
            '<tr><th scope="row"><label for="%s">%s</label></th><td><input type="%s" id="%s" name="%s[%s]" value="%s" class="regular-text"%s></td></tr>',
            esc_attr($id),
            esc_html($label),
            esc_attr($type),
            esc_attr($id),
            esc_attr($option),
            esc_attr($key),
            esc_attr($value),
            $readonly ? ' readonly' : ''
        );
    }

    /**
     * What the server and key allow: resolve (served by verdicts with POST
     * /v1/items/{item_id}/resolve) and the key's role (GET /v1/whoami where served, else a
     * harmless probe: an admin-only call on item 0, which is 403 for a lesser key and 404
     * otherwise). Cached for 10 minutes.
     *
     * @return array{resolve: bool, role: string}
     */
    public static function capabilities(WpClient $client): array
    {
        $caps = get_transient(self::CAPS_TRANSIENT);
        if (is_array($caps)) {
            return $caps;
        }
        $c = $client->client();
        $role = 'unknown';
        try {
            $resolve = $c->supports('POST', '/v1/items/{item_id}/resolve');
            if ($c->supports('GET', '/v1/whoami')) {
                $role = (string) $c->whoami()['role'];
            } else {
                try {
                    $c->requeue(0);
                    $role = 'admin';
                } catch (\Verdict\Exception\AuthException $e) {
                    $role = $e->httpStatus === 403 ? 'worker or reader' : 'unknown';
                } catch (\Verdict\Exception\VerdictException $e) {
                    $role = 'admin';
                }
            }
        } catch (\Verdict\Exception\VerdictException $e) {
            return ['resolve' => false, 'role' => 'unknown'];
        }
        $caps = ['resolve' => $resolve, 'role' => $role];
        set_transient(self::CAPS_TRANSIENT, $caps, 600);
        return $caps;
    }

    public static function renderTools(): void
    {
        if (!current_user_can('manage_options')) {
            wp_die(esc_html__('Not allowed.', 'verdict-pipeline'), 403);
        }
        $flow = (string) Verdict_Pipeline::setting('flow_step_id');
        echo '<div class="wrap verdict-pipeline"><h1 class="wp-heading-inline">' . esc_html__('verdict', 'verdict-pipeline') . '</h1>';
        printf(' <a class="page-title-action" href="%s" target="_blank" rel="noopener">%s</a><hr class="wp-header-end">', esc_url(self::consoleUrl()), esc_html__('Open verdict\'s console', 'verdict-pipeline'));
        echo '<p>' . esc_html(sprintf(__('Flow step %1$s at %2$s.', 'verdict-pipeline'), $flow, (string) Verdict_Pipeline::setting('base_url'))) . '</p>';
        if (isset($_GET['verdict_notice'])) {
            echo '<div class="notice notice-info is-dismissible verdict-notice"><p>' . esc_html(sanitize_text_field(wp_unslash((string) $_GET['verdict_notice']))) . '</p></div>';
        }
        self::renderOutbox();
        $client = Verdict_Pipeline::client();
        $stats = is_wp_error($client) ? $client : $client->stats($flow);
        if (is_wp_error($stats)) {
            echo '<div class="notice notice-error"><p>' . esc_html($stats->get_error_message()) . '</p></div></div>';
            return;
        }
        $caps = self::capabilities($client);
        $action = self::requestedAction();
        if ($action !== null) {
            self::renderConfirm($action[0], $action[1], $caps);
            echo '</div>';
            return;
        }
        $fs = $stats->flowStep($flow);
        self::renderSummary($fs);
        self::renderLastRun();
        if ($caps['role'] !== 'admin') {
            echo '<p class="verdict-role">' . esc_html(sprintf(__('The key\'s role is %s: requeue, resolve and release need an admin key.', 'verdict-pipeline'), $caps['role'])) . '</p>';
        } elseif (!$caps['resolve']) {
            echo '<p class="verdict-no-resolve">' . esc_html__('This verdict does not serve POST /v1/items/{item_id}/resolve, so resolve is not offered.', 'verdict-pipeline') . '</p>';
        }
        require_once __DIR__ . '/class-verdict-pipeline-list-table.php';
        $counts = array_fill_keys(Verdict_Pipeline_List_Table::STATES, 0);
        foreach ($fs?->items ?? [] as $state => $n) {
            $counts[$state] = (int) $n;
        }
        $table = new Verdict_Pipeline_List_Table($client, $flow, $counts, $caps, self::questions($client, $flow));
        $table->prepare_items();
        $table->views();
        echo '<form method="get" class="verdict-items">';
        echo '<input type="hidden" name="page" value="' . esc_attr(self::PAGE) . '">';
        if ($table->currentState() !== 'all') {
            echo '<input type="hidden" name="item_state" value="' . esc_attr($table->currentState()) . '">';
        }
        $table->search_box(__('Search identifier', 'verdict-pipeline'), 'verdict-item');
        $table->display();
        echo '</form></div>';
    }

    /**
     * The models' open questions of the flow step (GET /v1/reviews; none from a verdict without
     * it): item id => question, oldest first.
     *
     * @return array<int, string>
     */
    public static function questions(WpClient $client, string $flow): array
    {
        $q = $client->reviews($flow, 100);
        $out = [];
        foreach (is_wp_error($q) ? [] : $q['reviews'] as $r) {
            if (is_string($r['question'] ?? null)) {
                $out[(int) $r['item_id']] = $r['question'];
            }
        }
        return $out;
    }

    /**
     * The action asked for by a row action link or the bulk action form, its nonce checked.
     *
     * @return array{0: string, 1: list<int>}|null
     */
    private static function requestedAction(): ?array
    {
        $op = sanitize_key((string) ($_GET['action'] ?? ''));
        if ($op === '' || $op === '-1') {
            $op = sanitize_key((string) ($_GET['action2'] ?? ''));
        }
        if (!in_array($op, self::OPS, true)) {
            return null;
        }
        $nonce = (string) ($_GET['_wpnonce'] ?? '');
        if (!wp_verify_nonce($nonce, self::CONFIRM_NONCE) && !wp_verify_nonce($nonce, 'bulk-items')) {
            wp_die(esc_html__('The link has expired: go back and try again.', 'verdict-pipeline'), 403);
        }
        $ids = array_values(array_filter(array_map('intval', (array) ($_GET['item'] ?? [])), static fn (int $i): bool => $i > 0));
        return $ids ? [$op, $ids] : null;
    }

    /** @param list<int> $ids @param array{resolve: bool, role: string} $caps */
    private static function renderConfirm(string $op, array $ids, array $caps): void
    {
        $labels = ['requeue' => __('Requeue', 'verdict-pipeline'), 'release' => __('Release the claim of', 'verdict-pipeline'),
            'resolve_processed' => __('Resolve as processed', 'verdict-pipeline'), 'resolve_rejected' => __('Resolve as rejected', 'verdict-pipeline'),
            'answer' => __('Answer the question of', 'verdict-pipeline')];
        echo '<div class="card verdict-confirm"><h2>' . esc_html(sprintf(_n('%1$s %2$d item?', '%1$s %2$d items?', count($ids), 'verdict-pipeline'), $labels[$op], count($ids))) . '</h2>';
        echo '<p>' . esc_html(sprintf(__('Items: %s', 'verdict-pipeline'), implode(', ', array_map(static fn (int $i): string => '#' . $i, $ids)))) . '</p>';
        if ($caps['role'] !== 'admin') {
            echo '<p>' . esc_html__('The key is not an admin key: verdict will refuse this.', 'verdict-pipeline') . '</p>';
        }
        echo '<form method="post" action="' . esc_url(admin_url('admin-post.php')) . '">';
        wp_nonce_field('verdict_pipeline_' . $op);
        echo '<input type="hidden" name="action" value="verdict_pipeline_action"><input type="hidden" name="op" value="' . esc_attr($op) . '">';
        foreach ($ids as $id) {
            echo '<input type="hidden" name="item_ids[]" value="' . esc_attr((string) $id) . '">';
        }
        if ($op === 'answer') {
            self::renderAnswerFields($ids);
            echo '</form></div>';
            return;
        }
        $resolve = str_starts_with($op, 'resolve');
        printf(
            '<p><label for="verdict-reason">%s</label><br><input type="text" id="verdict-reason" name="reason" class="regular-text"%s></p>',
            esc_html($resolve ? __('Reason (required; recorded in verdict\'s audit trail)', 'verdict-pipeline') : __('Reason (optional; recorded in verdict\'s audit trail)', 'verdict-pipeline')),
            $resolve ? ' required' : ''
        );
        if ($op === 'requeue') {
            echo '<p><label><input type="checkbox" name="reset_budgets" value="1"> ' . esc_html__('Also reset the failure and defer budgets', 'verdict-pipeline') . '</label></p>';
        }
        submit_button(__('Confirm', 'verdict-pipeline'), 'primary', 'submit', false, ['id' => 'verdict-confirm']);
        printf(' <a class="button" href="%s">%s</a>', esc_url(admin_url('tools.php?page=' . self::PAGE)), esc_html__('Cancel', 'verdict-pipeline'));
        echo '</form></div>';
    }

    /** The answer form's fields: each item's question, the decision, the answer. @param list<int> $ids */
    private static function renderAnswerFields(array $ids): void
    {
        $client = Verdict_Pipeline::client();
        $questions = is_wp_error($client) ? [] : self::questions($client, (string) Verdict_Pipeline::setting('flow_step_id'));
        foreach ($ids as $id) {
            $q = $questions[$id] ?? __('(no open question: verdict will refuse an item that is not in manual_review)', 'verdict-pipeline');
            echo '<p class="verdict-question"><strong>' . esc_html(sprintf(__('#%d asks:', 'verdict-pipeline'), $id)) . '</strong> ' . esc_html($q) . '</p>';
        }
        $labels = ['retry' => __('Retry: the model tries again with the answer', 'verdict-pipeline'), 'processed' => __('Processed: close the item as done', 'verdict-pipeline'),
            'rejected' => __('Rejected: close the item as rejected', 'verdict-pipeline')];
        echo '<p><label for="verdict-decision">' . esc_html__('Decision', 'verdict-pipeline') . '</label><br><select id="verdict-decision" name="decision">';
        foreach ($labels as $value => $label) {
            echo '<option value="' . esc_attr($value) . '">' . esc_html($label) . '</option>';
        }
        echo '</select></p>';
        echo '<p><label for="verdict-answer">' . esc_html__('Answer (required for retry; the model reads it on its next attempt, and verdict keeps it, redacted, in the audit trail)', 'verdict-pipeline')
            . '</label><br><textarea id="verdict-answer" name="answer" rows="4" maxlength="4000"></textarea></p>';
        submit_button(__('Send the answer', 'verdict-pipeline'), 'primary', 'submit', false, ['id' => 'verdict-confirm']);
        printf(' <a class="button" href="%s">%s</a>', esc_url(admin_url('tools.php?page=' . self::PAGE)), esc_html__('Cancel', 'verdict-pipeline'));
    }

    private static function renderOutbox(): void
    {
        $o = Verdict_Pipeline_Outbox::summary();
        $class = $o['pending'] > 0 ? 'notice-warning' : 'notice-success';
        echo '<div class="notice inline ' . esc_attr($class) . ' verdict-outbox"><p><strong>' . esc_html__('Outbox', 'verdict-pipeline') . ':</strong> ';
        if ($o['pending'] === 0) {
            echo esc_html__('empty: every registration reached verdict.', 'verdict-pipeline');
        } else {
            echo esc_html(sprintf(
                _n('%1$d registration waits, the oldest since %2$s (%3$s ago).', '%1$d registrations wait, the oldest since %2$s (%3$s ago).', $o['pending'], 'verdict-pipeline'),
                $o['pending'],
                wp_date('Y-m-d H:i:s', (int) $o['oldest_at']),
                human_time_diff((int) $o['oldest_at'])
            ));
            if ($o['next_attempt_at'] > time()) {
                echo ' ' . esc_html(sprintf(__('Next attempt at %s.', 'verdict-pipeline'), wp_date('H:i:s', $o['next_attempt_at'])));
            }
        }
        if ($o['failed'] > 0) {
            echo ' ' . esc_html(sprintf(_n('%d was refused by verdict and is kept for inspection.', '%d were refused by verdict and are kept for inspection.', $o['failed'], 'verdict-pipeline'), $o['failed']));
        }
        if ($o['pending'] > 0 && $o['last_error'] !== null) {
            echo '<br><span class="verdict-outbox-error">' . esc_html(sprintf(__('Last error: %s', 'verdict-pipeline'), $o['last_error'])) . '</span>';
        }
        echo '</p>';
        if ($o['pending'] > 0) {
            echo '<form method="post" action="' . esc_url(admin_url('admin-post.php')) . '"><p>';
            wp_nonce_field('verdict_pipeline_flush');
            echo '<input type="hidden" name="action" value="verdict_pipeline_flush">';
            submit_button(__('Send now', 'verdict-pipeline'), 'secondary small', 'submit', false, ['id' => 'verdict-flush']);
            echo '</p></form>';
        }
        echo '</div>';
    }

    private static function renderSummary(?\Verdict\Model\FlowStepStats $fs): void
    {
        if ($fs === null) {
            echo '<p class="verdict-summary">' . esc_html__('verdict knows no items of this flow step yet.', 'verdict-pipeline') . '</p>';
            return;
        }
        $oldest = $fs->oldestClaimableAgeSeconds === null ? __('nothing waits to be claimed', 'verdict-pipeline')
            : sprintf(__('the oldest claimable item has waited %s', 'verdict-pipeline'), human_time_diff(time() - $fs->oldestClaimableAgeSeconds));
        printf('<p class="verdict-summary">%s</p>', esc_html(sprintf(
            __('Paused: %1$s. Stuck claims: %2$d. %3$s. Jobs in the last hour: %4$s.', 'verdict-pipeline'),
            $fs->paused ? __('yes', 'verdict-pipeline') : __('no', 'verdict-pipeline'),
            $fs->stuckClaims,
            ucfirst($oldest),
            $fs->jobsLastHour ? implode(', ', array_map(static fn ($k, $v) => "$k $v", array_keys($fs->jobsLastHour), $fs->jobsLastHour)) : __('none', 'verdict-pipeline')
        )));
    }

    private static function renderLastRun(): void
    {
        $last = get_option(Verdict_Pipeline::LAST_RUN);
        if (!is_array($last)) {
            return;
        }
        echo '<p class="verdict-last-run"><strong>' . esc_html__('Last cron run', 'verdict-pipeline') . ':</strong> ';
        echo esc_html(wp_date('Y-m-d H:i:s', (int) $last['at'])) . ': ';
        if (isset($last['error'])) {
            echo esc_html($last['error']);
        } else {
            echo esc_html(sprintf(
                __('%1$d claimed; %2$s', 'verdict-pipeline'),
                $last['claimed'],
                implode(', ', array_map(static fn ($k, $v) => "$k $v", array_keys($last['dispositions']), $last['dispositions'])) ?: __('nothing decided', 'verdict-pipeline')
            ));
        }
        echo '</p>';
    }

    /** admin-post.php?action=verdict_pipeline_action: requeue, release or resolve the confirmed items. */
    public static function handleAction(): void
    {
        $op = sanitize_key((string) ($_POST['op'] ?? ''));
        if (!current_user_can('manage_options') || !in_array($op, self::OPS, true) || !check_admin_referer('verdict_pipeline_' . $op)) {
            wp_die(esc_html__('Not allowed.', 'verdict-pipeline'), 403);
        }
        $ids = array_values(array_filter(array_map('intval', (array) ($_POST['item_ids'] ?? [])), static fn (int $i): bool => $i > 0));
        $user = wp_get_current_user()->user_login;
        $reason = sanitize_text_field(wp_unslash((string) ($_POST['reason'] ?? '')));
        $decision = sanitize_key((string) ($_POST['decision'] ?? ''));
        $answer = trim(sanitize_textarea_field(wp_unslash((string) ($_POST['answer'] ?? ''))));
        $client = Verdict_Pipeline::client();
        $done = [];
        $errors = [];
        foreach ($ids as $id) {
            $why = ($reason !== '' ? $reason . ' ' : '') . "(wp-admin, $user)";
            $result = match (true) {
                is_wp_error($client) => $client,
                str_starts_with($op, 'resolve') && $reason === '' => new WP_Error('verdict_missing_reason', __('A resolve needs a reason.', 'verdict-pipeline')),
                $op === 'answer' && !in_array($decision, self::DECISIONS, true) => new WP_Error('verdict_bad_decision', __('Choose retry, processed or rejected.', 'verdict-pipeline')),
                $op === 'answer' && $decision === 'retry' && $answer === '' => new WP_Error('verdict_missing_answer', __('A retry needs an answer.', 'verdict-pipeline')),
                $op === 'answer' => $client->answerReview($id, $decision, $answer !== '' ? $answer : null),
                $op === 'requeue' => $client->requeue($id, $why, !empty($_POST['reset_budgets'])),
                $op === 'release' => $client->releaseItem($id, $why),
                default => $client->resolve($id, substr($op, 8), $why),
            };
            if (is_wp_error($result)) {
                $errors[] = "#$id: " . $result->get_error_message();
            } else {
                $done[] = sprintf('#%d %s', $id, $result instanceof \Verdict\Model\JobResult ? $result->item->state : $result->state);
            }
        }
        $notice = ($done ? sprintf(__('Done: %s.', 'verdict-pipeline'), implode(', ', $done)) : '') . ($errors ? ' ' . sprintf(__('Refused: %s', 'verdict-pipeline'), implode('; ', $errors)) : '');
        wp_safe_redirect(add_query_arg(['page' => self::PAGE, 'verdict_notice' => rawurlencode(trim($notice))], admin_url('tools.php')));
        exit;
    }

    /** admin-post.php?action=verdict_pipeline_flush: send the outbox now (its pause ignored). */
    public static function handleFlush(): void
    {
        if (!current_user_can('manage_options') || !check_admin_referer('verdict_pipeline_flush')) {
            wp_die(esc_html__('Not allowed.', 'verdict-pipeline'), 403);
        }
        $sent = Verdict_Pipeline_Outbox::flush(true);
        $left = Verdict_Pipeline_Outbox::pendingCount();
        $notice = sprintf(__('Outbox: %1$d sent, %2$d waiting.', 'verdict-pipeline'), $sent, $left);
        wp_safe_redirect(add_query_arg(['page' => self::PAGE, 'verdict_notice' => rawurlencode($notice)], admin_url('tools.php')));
        exit;
    }

    /**
     * Posts -> All Posts: "Reprocess in verdict" under a published post.
     *
     * @param array<string, string> $actions
     * @return array<string, string>
     */
    public static function postRowActions(array $actions, WP_Post $post): array
    {
        if ($post->post_status !== 'publish' || !current_user_can('manage_options') || Verdict_Pipeline::itemForPost($post) === null) {
            return $actions;
        }
        $url = wp_nonce_url(
            add_query_arg(['action' => 'verdict_pipeline_reprocess_post', 'post' => $post->ID], admin_url('admin-post.php')),
            'verdict_pipeline_reprocess_post_' . $post->ID
        );
        $actions['verdict_reprocess'] = sprintf('<a href="%s" class="verdict-reprocess">%s</a>', esc_url($url), esc_html__('Reprocess in verdict', 'verdict-pipeline'));
        return $actions;
    }

    public static function handleReprocessPost(): void
    {
        $id = (int) ($_GET['post'] ?? 0);
        if (!current_user_can('manage_options') || !check_admin_referer('verdict_pipeline_reprocess_post_' . $id)) {
            wp_die(esc_html__('Not allowed.', 'verdict-pipeline'), 403);
        }
        $post = get_post($id);
        $item = $post instanceof WP_Post ? Verdict_Pipeline::itemForPost($post) : null;
        $r = $item === null ? new WP_Error('verdict_no_item', __('This post is not an item in verdict.', 'verdict-pipeline'))
            : verdict_pipeline_reprocess($item['item_identifier'], $item['source_type'], 'reprocess requested in wp-admin by ' . wp_get_current_user()->user_login);
        $notice = is_wp_error($r) ? $r->get_error_message() : sprintf(__('verdict requeued %1$s (item #%2$d): it is %3$s.', 'verdict-pipeline'), $item['item_identifier'], $r->id, $r->state);
        wp_safe_redirect(add_query_arg(['post_type' => $post->post_type ?? 'post', 'verdict_notice' => rawurlencode($notice)], admin_url('edit.php')));
        exit;
    }

    /** The notice after "Reprocess in verdict" on the posts list. */
    public static function postNotice(): void
    {
        global $pagenow;
        if ($pagenow === 'edit.php' && isset($_GET['verdict_notice']) && current_user_can('manage_options')) {
            echo '<div class="notice notice-info is-dismissible verdict-notice"><p>' . esc_html(sanitize_text_field(wp_unslash((string) $_GET['verdict_notice']))) . '</p></div>';
        }
    }
}
