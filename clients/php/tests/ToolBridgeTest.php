<?php

declare(strict_types=1);

namespace Verdict\Tests;

use Verdict\ToolBridge;

final class ToolBridgeTest extends TestCase
{
    public function testOpenAiToolCallsBecomeDispositions(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('bridge-oa');
        $this->seed($c, $flow, 2);
        $bridge = new ToolBridge($c, 'openai');
        $names = array_map(static fn ($t) => $t['function']['name'], $bridge->tools());
        self::assertSame(['complete_item', 'reject_source', 'defer_item', 'fail_item', 'request_review'], $names);
        self::assertSame('function', $bridge->tools()[0]['type']);
        [$a, $b] = $c->claim($flow, 'php-bridge', 2);

        $call = ['id' => 'call_1', 'type' => 'function', 'function' => ['name' => 'reject_source',
            'arguments' => json_encode(['reason_code' => 'too_thin', 'reason' => 'one line'])]];
        $r = $bridge->apply($a, $call);
        self::assertSame('reject_source', $r->disposition);
        self::assertSame('too_thin', $r->item->lastReasonCode);

        // a tool of the pipeline threw: recorded, and the model gets the envelope
        $failed = ['id' => 'call_2', 'type' => 'function', 'function' => ['name' => 'fetch_page', 'arguments' => '{"url":"https://x.example"}']];
        $out = $bridge->failure($b, $failed, new \RuntimeException('HTTP 503 from upstream'), 'transient');
        self::assertSame('tool', $out['message']['role']);
        self::assertSame('call_2', $out['message']['tool_call_id']);
        $env = json_decode($out['message']['content'], true);
        self::assertSame(['success' => false, 'error' => 'HTTP 503 from upstream', 'retryable' => true], [
            'success' => $env['success'], 'error' => $env['error'], 'retryable' => $env['retryable']]);
        self::assertSame('fetch_page', $c->getJob($b->jobId)->toolFailures[0]['tool']);

        $r = $bridge->apply($b, ['id' => 'call_3', 'type' => 'function', 'function' => ['name' => 'fail_item',
            'arguments' => '{"error":"gave up","retryable":false}']]);
        self::assertSame('failed', $r->item->state);
        $this->expectException(\InvalidArgumentException::class);
        $bridge->apply($b, $failed);
    }

    public function testAnthropicToolUseBecomesADisposition(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('bridge-an');
        $this->seed($c, $flow, 1);
        $bridge = new ToolBridge($c, 'anthropic');
        self::assertArrayHasKey('input_schema', $bridge->tools()[2]);
        [$a] = $c->claim($flow, 'php-bridge');
        $r = $bridge->apply($a, ['type' => 'tool_use', 'id' => 'toolu_1', 'name' => 'defer_item',
            'input' => ['reason_code' => 'low_confidence', 'manual_review' => true]]);
        self::assertSame('manual_review', $r->item->state);
        $msg = $bridge->resultMessage('toolu_1', ['ok' => true]);
        self::assertSame(['type' => 'tool_result', 'tool_use_id' => 'toolu_1', 'content' => '{"ok":true}', 'is_error' => false], $msg);
    }
}
