<?php

/**
 * Plugin Name:       verdict pipeline
 * Description:       Register items in verdict without losing one (a local outbox resent by WP-Cron or Action Scheduler), process claimed items in WP-Cron through the verdict_process_item filter, reprocess edited posts; Tools -> verdict lists every item with its history and actions; Site Health checks and info.
 * Version:           0.1.0
 * Requires at least: 6.1
 * Requires PHP:      8.1
 * License:           MIT
 * Text Domain:       verdict-pipeline
 */

declare(strict_types=1);

if (!defined('ABSPATH')) {
    exit;
}

define('VERDICT_PIPELINE_FILE', __FILE__);

/*
 * The client library (clients/php, Composer package verdict/client): from Composer's
 * autoloader when the site uses one, else from a copy bundled with the plugin (lib/client),
 * else from the repository layout this plugin lives in (clients/php next to clients/wordpress).
 */
if (!class_exists(\Verdict\Client::class)) {
    foreach ([__DIR__ . '/vendor/autoload.php'] as $autoload) {
        if (is_file($autoload)) {
            require_once $autoload;
        }
    }
}
if (!class_exists(\Verdict\Client::class)) {
    $verdict_pipeline_src = null;
    foreach ([__DIR__ . '/lib/client/src', dirname(__DIR__, 2) . '/php/src'] as $dir) {
        if (is_file($dir . '/Client.php')) {
            $verdict_pipeline_src = $dir;
            break;
        }
    }
    if ($verdict_pipeline_src !== null) {
        spl_autoload_register(static function (string $class) use ($verdict_pipeline_src): void {
            if (str_starts_with($class, 'Verdict\\')) {
                $file = $verdict_pipeline_src . '/' . str_replace('\\', '/', substr($class, 8)) . '.php';
                if (is_file($file)) {
                    require $file;
                }
            }
        });
    }
}

require_once __DIR__ . '/includes/class-verdict-pipeline.php';
require_once __DIR__ . '/includes/class-verdict-pipeline-outbox.php';
require_once __DIR__ . '/includes/class-verdict-pipeline-admin.php';

register_activation_hook(__FILE__, [Verdict_Pipeline::class, 'activate']);
register_deactivation_hook(__FILE__, [Verdict_Pipeline::class, 'deactivate']);
Verdict_Pipeline::boot();
Verdict_Pipeline_Outbox::boot();
Verdict_Pipeline_Admin::boot();

/**
 * Register items in verdict from any plugin: each item is {source_type, item_identifier,
 * payload?, priority?, ...}; flow_step_id defaults to the configured flow step.
 *
 * The registration is written to the site's outbox first and then sent, waiting at most one
 * second for verdict. Answers the list of \Verdict\Model\RegisteredItem when verdict took it
 * now; a WP_Error `verdict_queued` when it waits in the outbox (WP-Cron sends it later, in
 * order; nothing is lost); another WP_Error when verdict refused the items themselves (e.g.
 * `verdict_invalid_field`: nothing is kept). Either way the items reached verdict when the
 * action `verdict_pipeline_registered` ($items, $registered, $outbox_id) fires: keep item ids
 * there.
 *
 * @param list<array<string, mixed>> $items
 * @return list<\Verdict\Model\RegisteredItem>|WP_Error
 */
function verdict_pipeline_register_items(array $items)
{
    $flow = (string) Verdict_Pipeline::setting('flow_step_id');
    $items = array_map(static fn (array $i): array => $i + ['flow_step_id' => $flow], array_values($items));
    return Verdict_Pipeline_Outbox::submit('register', ['items' => $items]);
}

/**
 * Process an item again (an edited post, say): verdict requeues it (it becomes available and
 * is claimed again, with its history kept). Needs an admin key. The request goes through the
 * outbox like a registration: a WP_Error `verdict_queued` means it will be sent later; a claimed
 * item is requeued after its claim ends. The payload verdict holds is not changed: the
 * verdict_process_item filter should read the current post.
 *
 * @return \Verdict\Model\Item|WP_Error
 */
function verdict_pipeline_reprocess(string $identifier, ?string $source_type = null, string $reason = 'reprocess requested by WordPress')
{
    return Verdict_Pipeline_Outbox::submit('reprocess', ['flow_step_id' => (string) Verdict_Pipeline::setting('flow_step_id'),
        'source_type' => $source_type ?? (string) Verdict_Pipeline::setting('source_type'), 'item_identifier' => $identifier, 'reason' => $reason]);
}
