<?php

/**
 * tests/wordpress/check.php BASE_URL KEY FLOW POSTS_FILE - what verdict says after the WP-Cron
 * run, read over its HTTP API with plain curl (not the client under test): every post's item
 * is in the state the verdict_process_item callback decided, the tool failure reached the
 * flaky item's job, and the completed job carries the callback's engine_data and model usage.
 */

declare(strict_types=1);

[, $base, $key, $flow, $postsFile] = $argv;
$mode = $argv[5] ?? 'posts';

function api(string $method, string $path, ?array $body = null): array
{
    global $base, $key;
    $h = curl_init($base . $path);
    curl_setopt_array($h, [CURLOPT_CUSTOMREQUEST => $method, CURLOPT_RETURNTRANSFER => true,
        CURLOPT_HTTPHEADER => ['Authorization: Bearer ' . $key, 'Content-Type: application/json']]);
    if ($body !== null) {
        curl_setopt($h, CURLOPT_POSTFIELDS, json_encode($body));
    }
    $out = curl_exec($h);
    $status = curl_getinfo($h, CURLINFO_RESPONSE_CODE);
    if ($status !== 200) {
        fwrite(STDERR, "$method $path: $status $out\n");
        exit(1);
    }
    return json_decode((string) $out, true);
}

$failures = 0;
function expect(bool $ok, string $what): void
{
    global $failures;
    echo ($ok ? 'ok   ' : 'FAIL ') . $what . "\n";
    $failures += $ok ? 0 : 1;
}

if ($mode === 'outage') {
    // the 5 posts published while verdict was down: each is one item, registered once, processed once
    $lines = file($postsFile, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES);
    expect(count($lines) === 5, 'the site knows 5 outage posts (' . count($lines) . ')');
    $idents = [];
    foreach ($lines as $line) {
        preg_match('/^(post-\d+) (.+) item (\d+)$/', $line, $m);
        $idents[$m[1]] = (int) $m[3];
    }
    $known = api('POST', '/v1/items/lookup', ['flow_step_id' => $flow, 'source_type' => 'wp_post', 'item_identifiers' => array_keys($idents)])['items'];
    expect(count($known) === 5, 'verdict knows the 5 outage posts');
    foreach ($known as $k) {
        $d = api('GET', '/v1/items/' . $k['id']);
        $causes = array_count_values(array_column($d['transitions'], 'cause'));
        expect($idents[$k['item_identifier']] === (int) $k['id'] && ($causes['register'] ?? 0) === 1 && $d['item']['state'] === 'processed'
            && $d['item']['attempts'] === 1, "{$k['item_identifier']}: one item, registered once, processed in one attempt (" . json_encode($causes) . ')');
    }
    exit($failures ? 1 : 0);
}

$want = ['good news' => 'processed', 'spam offer' => 'rejected', 'flaky source' => 'deferred', 'broken page' => 'failed', 'needs review' => 'manual_review',
    'come back later' => 'deferred', 'undecided' => 'available'];
$items = [];
foreach (file($postsFile, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) as $line) {
    if (preg_match('/^(post-\d+) (.+) item (\d+)$/', $line, $m)) {
        $items[$m[2]] = ['ident' => $m[1], 'id' => (int) $m[3]];
    }
}
expect(count($items) === count($want), 'every post was registered (' . count($items) . ')');
$known = api('POST', '/v1/items/lookup', ['flow_step_id' => $flow, 'source_type' => 'wp_post',
    'item_identifiers' => array_column($items, 'ident')])['items'];
expect(count($known) === count($want), 'verdict knows every post as an item of the flow step');

foreach ($want as $title => $state) {
    $got = api('GET', '/v1/items/' . $items[$title]['id']);
    expect($got['item']['state'] === $state, "'$title' is $state (got {$got['item']['state']}, {$got['item']['last_reason_code']})");
    $items[$title]['detail'] = $got;
}
$jobOf = static fn (string $t): array => api('GET', '/v1/jobs/' . $items[$t]['detail']['item']['current_job_id'])['job'];
$flaky = $jobOf('flaky source');
expect(
    $flaky['tool_failures']['count'] === 1 && $flaky['tool_failures']['by_tool'][0]['tool'] === 'fetch_page',
    'the tool failure reached verdict (' . json_encode($flaky['tool_failures']) . ')'
);
expect($flaky['reason_code'] === 'tool_error', 'the flaky item was deferred as tool_error');
$good = $jobOf('good news');
expect(($good['engine_data']['post_id'] ?? null) !== null && $good['disposition'] === 'complete', 'the completed job carries the post id');
expect(($good['usage']['input_tokens'] ?? null) === 120 && ($good['usage']['output_tokens'] ?? null) === 30
    && ($good['usage']['model'] ?? null) === 'e2e-model', 'the completion reported the model usage (' . json_encode($good['usage'] ?? null) . ')');
expect($jobOf('spam offer')['reason_code'] === 'spam', 'the spam source was rejected as spam');
$undecided = $jobOf('undecided');
expect(
    $undecided['status'] === 'released' && $items['undecided']['detail']['item']['failures'] === 0,
    'no decision released the claim without spending a budget'
);
expect(str_starts_with($good['worker_id'], 'wp@'), "the worker id names the site ({$good['worker_id']})");
exit($failures ? 1 : 0);
