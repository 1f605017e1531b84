<?php
/**
 * The plugin's admin screens: Settings -> verdict pipeline (base URL, key, flow step, worker
 * sizes) and Tools -> verdict (the flow step's counts, the last cron run, and the review
 * queue: manual_review items with requeue, and resolve where the server serves it and the
 * key is an admin key).
 */

declare(strict_types=1);

use Verdict\WordPress\WpClient;

final class Verdict_Pipeline_Admin
{
    public const PAGE = 'verdict-pipeline';
    public const SETTINGS_PAGE = 'verdict-pipeline-settings';
    private const CAPS_TRANSIENT = 'verdict_pipeline_caps';

    public static function boot(): void
    {
        add_action('admin_menu', [self::class, 'menus']);
        add_action('admin_init', [self::class, 'registerSettings']);
        add_action('admin_post_verdict_pipeline_action', [self::class, 'handleAction']);
    }

    public static function menus(): void
    {
        add_management_page(__('verdict', 'verdict-pipeline'), __('verdict', 'verdict-pipeline'), 'manage_options', self::PAGE, [self::class, 'renderTools']);
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
        echo '</table>';
        submit_button();
        echo '</form></div>';
    }

    private static function field(string $option, string $key, string $label, string $value, string $type = 'text', bool $readonly = false): void
    {
        $id = 'verdict-' . str_replace('_', '-', $key);
        printf('<tr><th scope="row"><label for="%s">%s</label></th><td><input type="%s" id="%s" name="%s[%s]" value="%s" class="regular-text"%s></td></tr>',
            esc_attr($id), esc_html($label), esc_attr($type), esc_attr($id), esc_attr($option), esc_attr($key), esc_attr($value), $readonly ? ' readonly' : '');
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
            return;
        }
        $flow = (string) Verdict_Pipeline::setting('flow_step_id');
        echo '<div class="wrap verdict-pipeline"><h1>' . esc_html__('verdict', 'verdict-pipeline') . '</h1>';
        echo '<p>' . esc_html(sprintf(__('Flow step %1$s at %2$s.', 'verdict-pipeline'), $flow, (string) Verdict_Pipeline::setting('base_url'))) . '</p>';
        if (isset($_GET['verdict_notice'])) {
            echo '<div class="notice notice-info"><p>' . esc_html(sanitize_text_field(wp_unslash((string) $_GET['verdict_notice']))) . '</p></div>';
        }
        $client = Verdict_Pipeline::client();
        $stats = is_wp_error($client) ? $client : $client->stats($flow);
        if (is_wp_error($stats)) {
            echo '<div class="notice notice-error"><p>' . esc_html($stats->get_error_message()) . '</p></div></div>';
            return;
        }
        self::renderCounts($stats->flowStep($flow));
        self::renderLastRun();
        self::renderQueue($client, $flow);
        echo '</div>';
    }

    private static function renderCounts(?\Verdict\Model\FlowStepStats $fs): void
    {
        echo '<h2>' . esc_html__('Items by state', 'verdict-pipeline') . '</h2>';
        if ($fs === null) {
            echo '<p>' . esc_html__('verdict knows no items of this flow step yet.', 'verdict-pipeline') . '</p>';
            return;
        }
        echo '<table class="widefat striped verdict-counts"><thead><tr>';
        foreach (array_keys($fs->items) as $state) {
            echo '<th scope="col">' . esc_html($state) . '</th>';
        }
        echo '</tr></thead><tbody><tr>';
        foreach ($fs->items as $state => $n) {
            echo '<td data-state="' . esc_attr($state) . '">' . esc_html((string) $n) . '</td>';
        }
        echo '</tr></tbody></table>';
        printf('<p>%s</p>', esc_html(sprintf(__('Paused: %1$s. Stuck claims: %2$d. Oldest claimable: %3$s s. Jobs in the last hour: %4$s.', 'verdict-pipeline'),
            $fs->paused ? __('yes', 'verdict-pipeline') : __('no', 'verdict-pipeline'), $fs->stuckClaims,
            $fs->oldestClaimableAgeSeconds === null ? '-' : (string) $fs->oldestClaimableAgeSeconds,
            implode(', ', array_map(static fn ($k, $v) => "$k $v", array_keys($fs->jobsLastHour), $fs->jobsLastHour)))));
    }

    private static function renderLastRun(): void
    {
        $last = get_option(Verdict_Pipeline::LAST_RUN);
        if (!is_array($last)) {
            return;
        }
        echo '<h2>' . esc_html__('Last cron run', 'verdict-pipeline') . '</h2><p class="verdict-last-run">';
        echo esc_html(wp_date('Y-m-d H:i:s', (int) $last['at'])) . ': ';
        if (isset($last['error'])) {
            echo esc_html($last['error']);
        } else {
            echo esc_html(sprintf(__('%1$d claimed; %2$s', 'verdict-pipeline'), $last['claimed'],
                implode(', ', array_map(static fn ($k, $v) => "$k $v", array_keys($last['dispositions']), $last['dispositions']))));
        }
        echo '</p>';
    }

    private static function renderQueue(WpClient $client, string $flow): void
    {
        echo '<h2>' . esc_html__('Review queue (manual_review)', 'verdict-pipeline') . '</h2>';
        $page = $client->listItems($flow, 'manual_review', 50);
        if (is_wp_error($page)) {
            echo '<div class="notice notice-error"><p>' . esc_html($page->get_error_message()) . '</p></div>';
            return;
        }
        $caps = self::capabilities($client);
        $admin = $caps['role'] === 'admin';
        if (!$admin) {
            echo '<p class="verdict-role">' . esc_html(sprintf(__('The key\'s role is %s: requeue and resolve need an admin key.', 'verdict-pipeline'), $caps['role'])) . '</p>';
        } elseif (!$caps['resolve']) {
            echo '<p class="verdict-no-resolve">' . esc_html__('This verdict does not serve POST /v1/items/{item_id}/resolve, so only requeue is offered.', 'verdict-pipeline') . '</p>';
        }
        if (!$page->entries) {
            echo '<p class="verdict-queue-empty">' . esc_html__('Nothing waits for review.', 'verdict-pipeline') . '</p>';
            return;
        }
        echo '<table class="widefat striped verdict-queue"><thead><tr><th scope="col">id</th><th scope="col">' . esc_html__('Item', 'verdict-pipeline')
            . '</th><th scope="col">' . esc_html__('Reason', 'verdict-pipeline') . '</th><th scope="col">' . esc_html__('Actions', 'verdict-pipeline') . '</th></tr></thead><tbody>';
        foreach ($page->entries as $item) {
            echo '<tr data-item-id="' . esc_attr((string) $item->id) . '"><td>' . esc_html((string) $item->id) . '</td><td>' . esc_html($item->sourceType . ': ' . $item->itemIdentifier)
                . '</td><td>' . esc_html(trim(($item->lastReasonCode ?? '') . ' ' . ($item->lastReason ?? ''))) . '</td><td>';
            if ($admin) {
                self::actionButton($item->id, 'requeue', __('Requeue', 'verdict-pipeline'));
                if ($caps['resolve']) {
                    self::actionButton($item->id, 'resolve_processed', __('Mark processed', 'verdict-pipeline'));
                    self::actionButton($item->id, 'resolve_rejected', __('Reject', 'verdict-pipeline'));
                }
            }
            echo '</td></tr>';
        }
        echo '</tbody></table>';
    }

    private static function actionButton(int $itemId, string $op, string $label): void
    {
        echo '<form method="post" action="' . esc_url(admin_url('admin-post.php')) . '" style="display:inline">';
        wp_nonce_field('verdict_pipeline_' . $op . '_' . $itemId);
        printf('<input type="hidden" name="action" value="verdict_pipeline_action"><input type="hidden" name="op" value="%s"><input type="hidden" name="item_id" value="%d">',
            esc_attr($op), $itemId);
        if (str_starts_with($op, 'resolve')) {
            echo '<input type="text" name="reason" required placeholder="' . esc_attr__('reason', 'verdict-pipeline') . '" aria-label="' . esc_attr__('reason', 'verdict-pipeline') . '">';
        }
        submit_button($label, 'secondary small', 'submit', false, ['id' => "verdict-$op-$itemId"]);
        echo '</form> ';
    }

    /** admin-post.php?action=verdict_pipeline_action: requeue or resolve one item. */
    public static function handleAction(): void
    {
        $op = sanitize_key((string) ($_POST['op'] ?? ''));
        $id = (int) ($_POST['item_id'] ?? 0);
        if (!current_user_can('manage_options') || !check_admin_referer('verdict_pipeline_' . $op . '_' . $id)) {
            wp_die(esc_html__('Not allowed.', 'verdict-pipeline'), 403);
        }
        $user = wp_get_current_user()->user_login;
        $reason = sanitize_text_field(wp_unslash((string) ($_POST['reason'] ?? '')));
        $client = Verdict_Pipeline::client();
        $result = match (true) {
            is_wp_error($client) => $client,
            $op === 'requeue' => $client->requeue($id, "requeued from wp-admin by $user"),
            $op === 'resolve_processed', $op === 'resolve_rejected' => $client->resolve($id, substr($op, 8), "$reason (wp-admin, $user)"),
            default => new WP_Error('verdict_unknown_action', 'unknown action'),
        };
        $notice = is_wp_error($result) ? $result->get_error_message() : sprintf(__('Item %1$d is now %2$s.', 'verdict-pipeline'), $id, $result->state);
        wp_safe_redirect(add_query_arg(['page' => self::PAGE, 'verdict_notice' => rawurlencode($notice)], admin_url('tools.php')));
        exit;
    }
}
