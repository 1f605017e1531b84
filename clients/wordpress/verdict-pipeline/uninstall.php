<?php

/**
 * Deleting the plugin (not deactivating it) removes what it keeps in the site's database: the
 * outbox table (registrations still waiting in it are dropped with it), its options, and the
 * per-user "items per page" of Tools -> verdict.
 */

declare(strict_types=1);

if (!defined('WP_UNINSTALL_PLUGIN')) {
    exit;
}
global $wpdb;
$wpdb->query('DROP TABLE IF EXISTS ' . $wpdb->prefix . 'verdict_outbox');
foreach (['verdict_pipeline_settings', 'verdict_pipeline_last_run', 'verdict_pipeline_outbox_db', 'verdict_pipeline_outbox_state', 'verdict_pipeline_outbox_lock'] as $option) {
    delete_option($option);
}
delete_transient('verdict_pipeline_caps');
delete_metadata('user', 0, 'verdict_pipeline_per_page', '', true);
wp_clear_scheduled_hook('verdict_pipeline_work');
wp_clear_scheduled_hook('verdict_pipeline_flush_outbox');
