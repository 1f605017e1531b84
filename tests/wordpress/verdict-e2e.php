<?php

/**
 * A must-use plugin for the end-to-end test (tests/wordpress/e2e.sh), written the way a site's
 * own plugin would use verdict-pipeline: it registers every published post as an item (from
 * the transition_post_status callback) and decides items in the verdict_process_item filter
 * by the post's title: "good" completes, "spam" rejects the source, "flaky" reports a tool
 * failure and defers, "broken" fails for good, "review" asks for manual review, "later" defers for an hour, anything
 * else returns no decision (the claim is released).
 */

declare(strict_types=1);

add_action('transition_post_status', static function (string $new, string $old, WP_Post $post): void {
    if ($new !== 'publish' || $old === 'publish' || $post->post_type !== 'post') {
        return;
    }
    $r = verdict_pipeline_register_items([[
        'source_type' => 'wp_post',
        'item_identifier' => 'post-' . $post->ID,
        'payload' => ['post_id' => $post->ID, 'title' => $post->post_title],
    ]]);
    if (is_wp_error($r) && $r->get_error_code() !== 'verdict_queued') {
        error_log('verdict-e2e: registration refused: ' . $r->get_error_message()); // invalid items: nothing was kept
    }
    $GLOBALS['verdict_e2e_last_result'] = is_wp_error($r) ? $r->get_error_code() : 'sent';
}, 10, 3);

// the items reached verdict (now, or later from the outbox): keep the item id with the post
add_action('verdict_pipeline_registered', static function (array $items, array $registered): void {
    $count = get_option('verdict_e2e_registered', []);
    foreach ($items as $i => $item) {
        $count[$item['item_identifier']] = ($count[$item['item_identifier']] ?? 0) + 1;
        update_post_meta((int) $item['payload']['post_id'], '_verdict_item_id', $registered[$i]->id);
    }
    update_option('verdict_e2e_registered', $count, false);
}, 10, 2);

add_filter('verdict_process_item', static function ($decision, array $item, \Verdict\JobContext $ctx) {
    $title = (string) ($item['payload']['title'] ?? '');
    $seen = get_option('verdict_e2e_seen', []);
    $seen[] = $item['item_identifier'];
    update_option('verdict_e2e_seen', $seen, false);
    if (str_contains($title, 'good') || str_contains($title, 'outage')) {
        // a model API's own usage object (OpenAI's names): the plugin reports it with the disposition
        return ['disposition' => 'complete', 'engine_data' => ['post_id' => $item['payload']['post_id']],
            'usage' => ['prompt_tokens' => 120, 'completion_tokens' => 30, 'model' => 'e2e-model']];
    }
    if (str_contains($title, 'spam')) {
        return \Verdict\Decision::reject('spam', 'casino links');
    }
    if (str_contains($title, 'flaky')) {
        $envelope = $ctx->toolFailure('fetch_page', ['url' => 'https://upstream.invalid/' . $item['id']], 'HTTP 503 from upstream', 'transient');
        update_option('verdict_e2e_envelope', $envelope->toArray(), false);
        return ['disposition' => 'defer_item', 'reason_code' => 'tool_error', 'reason' => 'fetch_page failed', 'retry_after_seconds' => 3600];
    }
    if (str_contains($title, 'broken')) {
        return \Verdict\Decision::fail('the page cannot be parsed', false);
    }
    if (str_contains($title, 'review')) {
        return \Verdict\Decision::defer('low_confidence', 'a person should look', true);
    }
    if (str_contains($title, 'later')) {
        return \Verdict\Decision::defer('dependency_outage', 'the CMS API is down', false, 3600);
    }
    return $decision;
}, 10, 3);
