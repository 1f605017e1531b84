<?php

/**
 * tests/wordpress/wp.php WP_DIR STEP - one step of the end-to-end test, run by e2e.sh with
 * php-cli inside the WordPress at WP_DIR (no web server): install, activate, posts, cron,
 * admin (the Tools -> verdict page, rendered by wp-admin/tools.php for a logged-in admin),
 * health. Prints what the shell checks; exits non-zero on failure.
 */

declare(strict_types=1);

[$e2e_self, $e2e_root, $e2e_step] = $argv + [null, null, null];
$_SERVER['HTTP_HOST'] = 'wp.invalid';
$_SERVER['SERVER_NAME'] = 'wp.invalid';
$_SERVER['REQUEST_METHOD'] = 'GET';
$_SERVER['REQUEST_URI'] = '/';
$_SERVER['SERVER_PROTOCOL'] = 'HTTP/1.1';

function e2e_fail(string $msg): never
{
    fwrite(STDERR, "wp.php: $msg\n");
    exit(1);
}

switch ($e2e_step) {
    case 'install':
        define('WP_INSTALLING', true);
        $GLOBALS['wp_filter']['pre_wp_mail'][10][] = ['function' => '__return_false', 'accepted_args' => 1]; // no sendmail here
        require $e2e_root . '/wp-load.php';
        require_once ABSPATH . 'wp-admin/includes/upgrade.php';
        $r = wp_install('verdict e2e', 'admin', 'admin@example.invalid', false, '', (string) getenv('E2E_PASS'));
        update_option('show_avatars', 0); // no Gravatar requests from the offline test
        echo "installed user {$r['user_id']}\n";
        break;

    case 'activate':
        require $e2e_root . '/wp-load.php';
        // installed from the zip and activated in the browser (screens.mjs install)
        require_once ABSPATH . 'wp-admin/includes/plugin.php';
        if (!is_plugin_active('verdict-pipeline/verdict-pipeline.php') || !is_file(WP_PLUGIN_DIR . '/verdict-pipeline/lib/client/src/Client.php')) {
            e2e_fail('the plugin is not active, or its bundled client is missing');
        }
        global $wpdb;
        if ($wpdb->get_var('SHOW TABLES LIKE \'' . Verdict_Pipeline_Outbox::table() . '\'') === null) {
            e2e_fail('activation did not create the outbox table');
        }
        update_option('verdict_pipeline_settings', ['flow_step_id' => getenv('E2E_FLOW'), 'batch' => 3, 'max_items' => 20]);
        echo 'outbox table ' . Verdict_Pipeline_Outbox::table() . '; ';
        if (!wp_next_scheduled('verdict_pipeline_work')) {
            e2e_fail('the cron event was not scheduled');
        }
        echo "active; cron at " . wp_next_scheduled('verdict_pipeline_work') . "\n";
        break;

    case 'posts':
        require $e2e_root . '/wp-load.php';
        foreach (['good news', 'spam offer', 'flaky source', 'broken page', 'needs review', 'come back later', 'undecided'] as $title) {
            $id = wp_insert_post(['post_title' => $title, 'post_content' => 'x', 'post_status' => 'publish', 'post_author' => 1], true);
            if (is_wp_error($id)) {
                e2e_fail('post: ' . $id->get_error_message());
            }
            $item = (int) get_post_meta($id, '_verdict_item_id', true);
            if ($item < 1) {
                e2e_fail("post $id was not registered in verdict");
            }
            echo "post-$id $title item $item\n";
        }
        break;

    case 'outage-posts':
        // verdict hangs: each publish waits at most a second and the registration waits in the outbox
        require $e2e_root . '/wp-load.php';
        $times = [];
        for ($n = 1; $n <= 5; $n++) {
            $t = microtime(true);
            $id = wp_insert_post(['post_title' => "outage $n", 'post_content' => 'x', 'post_status' => 'publish', 'post_author' => 1], true);
            $times[] = microtime(true) - $t;
            if (is_wp_error($id) || ($GLOBALS['verdict_e2e_last_result'] ?? '') !== 'verdict_queued') {
                e2e_fail("outage post $n: " . (is_wp_error($id) ? $id->get_error_message() : 'result ' . ($GLOBALS['verdict_e2e_last_result'] ?? 'none')));
            }
        }
        // the first publish waits the 1 s timeout; the others queue behind it without waiting
        echo json_encode(['first_publish_s' => round($times[0], 3), 'slowest_publish_s' => round(max($times), 3),
            'publish_s' => array_map(static fn ($t) => round($t, 3), $times)] + Verdict_Pipeline_Outbox::summary()), "\n";
        break;

    case 'outbox':
        require $e2e_root . '/wp-load.php';
        echo json_encode(Verdict_Pipeline_Outbox::summary() + ['failures' => Verdict_Pipeline_Outbox::state()['failures'],
            'attempts' => array_map('intval', array_column(Verdict_Pipeline_Outbox::rows(), 'attempts'))]), "\n";
        break;

    case 'time-passes':
        // a minute (and the outbox's pause) has passed: the test does not wait for them
        require $e2e_root . '/wp-load.php';
        $state = Verdict_Pipeline_Outbox::state();
        update_option(Verdict_Pipeline_Outbox::STATE_OPTION, ['next_attempt_at' => 0] + $state, false);
        $flushAt = wp_next_scheduled(Verdict_Pipeline_Outbox::FLUSH_HOOK);
        if ($state['failures'] > 0 && ($flushAt === false || $flushAt <= time())) {
            e2e_fail('no resend was scheduled after the pause');
        }
        foreach ([Verdict_Pipeline_Outbox::FLUSH_HOOK, Verdict_Pipeline::CRON_HOOK] as $hook) {
            $event = wp_get_scheduled_event($hook);
            if ($event !== false) {
                wp_unschedule_event($event->timestamp, $hook);
                $event->schedule
                    ? wp_schedule_event(time() - 1, $event->schedule, $hook)
                    : wp_schedule_single_event(time() - 1, $hook);
            }
        }
        echo $flushAt ? 'the resend was due in ' . ($flushAt - time()) . " s\n" : '';
        break;

    case 'outage-check':
        // every outage post reached verdict exactly once, and the site kept the item id
        require $e2e_root . '/wp-load.php';
        $count = get_option('verdict_e2e_registered', []);
        foreach (get_posts(['s' => 'outage', 'post_status' => 'publish', 'numberposts' => -1]) as $p) {
            $item = (int) get_post_meta($p->ID, '_verdict_item_id', true);
            $times = $count['post-' . $p->ID] ?? 0;
            if ($item < 1 || $times !== 1) {
                e2e_fail("post-{$p->ID} ({$p->post_title}): item $item, registered $times times");
            }
            echo "post-{$p->ID} {$p->post_title} item $item\n";
        }
        break;

    case 'late-post':
        // verdict is down: one more post waits in the outbox, and 20 minutes pass
        require $e2e_root . '/wp-load.php';
        wp_insert_post(['post_title' => 'late post', 'post_content' => 'x', 'post_status' => 'publish', 'post_author' => 1], true);
        if (($GLOBALS['verdict_e2e_last_result'] ?? '') !== 'verdict_queued') {
            e2e_fail('the late post was not queued');
        }
        global $wpdb;
        $wpdb->query('UPDATE ' . Verdict_Pipeline_Outbox::table() . ' SET created_at = created_at - 1200');
        $health = Verdict_Pipeline::siteHealthOutbox();
        if ($health['status'] !== 'recommended') {
            e2e_fail('Site Health does not warn about the outbox: ' . $health['status']);
        }
        echo "late post queued; Site Health: {$health['status']}\n";
        break;

    case 'edit':
        // edit a published post; its item in verdict must then be in state $argv[4]
        [, , , $ident, $want] = $argv + [null, null, null, null, null];
        require $e2e_root . '/wp-load.php';
        $id = (int) substr((string) $ident, 5);
        $r = wp_update_post(['ID' => $id, 'post_content' => 'edited at ' . microtime(true)], true);
        if (is_wp_error($r)) {
            e2e_fail('edit: ' . $r->get_error_message());
        }
        $c = Verdict_Pipeline::client()->client();
        $known = $c->lookupItems((string) getenv('E2E_FLOW'), 'wp_post', [$ident]);
        $state = $known[$ident]['state'] ?? 'unknown';
        $requeues = count(array_filter($c->getItem($known[$ident]['id'])->transitions, static fn ($t) => $t['cause'] === 'requeue'));
        echo "edited $ident: its item is $state ($requeues requeue transitions); reprocess on update " . (Verdict_Pipeline::setting('reprocess_on_update') ? 'on' : 'off') . "\n";
        if ($state !== $want || $requeues !== ($want === 'available' ? 1 : 0)) {
            e2e_fail("$ident is $state with $requeues requeues, wanted $want");
        }
        break;

    case 'cron':
        // WP-Cron as a system cron job runs it: php wp-cron.php
        chdir($e2e_root);
        require $e2e_root . '/wp-cron.php';
        break;

    case 'report':
        require $e2e_root . '/wp-load.php';
        echo json_encode(['last_run' => get_option('verdict_pipeline_last_run'), 'seen' => get_option('verdict_e2e_seen'),
            'envelope' => get_option('verdict_e2e_envelope')], JSON_PRETTY_PRINT), "\n";
        break;

    case 'health':
        require $e2e_root . '/wp-load.php';
        $ok = Verdict_Pipeline::siteHealthReadyz();
        $tests = apply_filters('site_status_tests', ['direct' => [], 'async' => []]);
        $bad = \Verdict\WordPress\WpClient::create('http://127.0.0.1:1', 'k', ['max_retries' => 0])->stats();
        echo json_encode(['status' => $ok['status'], 'registered' => isset($tests['direct']['verdict_readyz']),
            'wp_error' => is_wp_error($bad) ? $bad->get_error_code() : 'none',
            'wp_error_data' => is_wp_error($bad) ? array_keys($bad->get_error_data()) : []]), "\n";
        break;

    case 'admin':
        define('WP_ADMIN', true);
        $_SERVER['REQUEST_URI'] = '/wp-admin/tools.php?page=verdict-pipeline';
        $_SERVER['PHP_SELF'] = '/wp-admin/tools.php';
        $_SERVER['SCRIPT_NAME'] = '/wp-admin/tools.php';
        $_GET['page'] = 'verdict-pipeline';
        $_REQUEST['page'] = 'verdict-pipeline';
        require $e2e_root . '/wp-load.php';
        // a logged-in administrator: the auth cookies WordPress itself would have set
        $exp = time() + 3600;
        $_COOKIE[AUTH_COOKIE] = wp_generate_auth_cookie(1, $exp, 'auth');
        $_COOKIE[LOGGED_IN_COOKIE] = wp_generate_auth_cookie(1, $exp, 'logged_in');
        wp_set_current_user(1); // WordPress determined the (anonymous) user while it loaded
        chdir($e2e_root . '/wp-admin');
        $pagenow = 'tools.php';
        require $e2e_root . '/wp-admin/tools.php';
        break;

    default:
        e2e_fail("unknown step '$e2e_step'");
}
