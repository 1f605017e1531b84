<?php

declare(strict_types=1);

namespace Verdict\Tests;

use Verdict\Decision;
use Verdict\JobContext;
use Verdict\Model\Claim;
use Verdict\Worker;

final class WorkerTest extends TestCase
{
    public function testCallbackDecisionsBecomeDispositions(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('worker');
        $ids = $this->seed($c, $flow, 6);
        $worker = new Worker($c, $flow, 'php-worker@1', ['limit' => 4, 'heartbeat_every' => 0.0]);
        $seen = [];
        $report = $worker->run(function (Claim $cl, JobContext $ctx) use (&$seen) {
            $seen[] = $cl->item->itemIdentifier;
            $ctx->tick(); // heartbeat_every 0: beats
            return match ($cl->item->itemIdentifier) {
                'a' => Decision::complete(['post_id' => 1]),
                'b' => Decision::reject('spam', 'casino'),
                'c' => ['disposition' => 'defer_item', 'reason_code' => 'tool_error', 'retry_after_seconds' => 3600],
                'd' => throw new \RuntimeException('model timed out'),
                'e' => null,
                default => Decision::defer('low_confidence', null, true),
            };
        });
        sort($seen);
        self::assertSame(['a', 'b', 'c', 'd', 'e', 'f'], $seen, 'the released item came back and was given back, not processed again');
        $counts = $report->dispositions;
        ksort($counts);
        self::assertSame(['complete' => 1, 'defer_item' => 2, 'fail' => 1, 'reject_source' => 1, 'release' => 2], $counts);
        self::assertSame([], $report->errors);
        $states = [];
        foreach ($ids as $i => $id) {
            $states[\chr(97 + $i)] = $c->getItem($id)->item->state;
        }
        self::assertSame(['a' => 'processed', 'b' => 'rejected', 'c' => 'deferred', 'd' => 'deferred', 'e' => 'available', 'f' => 'manual_review'], $states);
        self::assertStringContainsString('model timed out', (string) $c->getItem($ids[3])->item->lastReason);
    }

    public function testTheLastDispositionOfABatchClaimsTheNext(): void
    {
        $t = new RecordingTransport();
        $c = $this->client('worker', ['transport' => $t]);
        $flow = $this->flow('next');
        $this->seed($this->client(), $flow, 7);
        $worker = new Worker($c, $flow, 'php-worker@3', ['limit' => 3, 'heartbeat_every' => 3600.0]);
        $report = $worker->run(fn (Claim $cl): Decision => Decision::complete());
        self::assertSame(7, $report->claimed);
        self::assertSame(['complete' => 7], $report->dispositions);
        $claims = \count(array_filter($t->sent, static fn (array $s): bool => str_ends_with($s['url'], '/v1/claims')));
        self::assertSame(1, $claims, 'one claim call; every later batch came with a disposition (claim_next)');
        $plain = new Worker($c, $flow, 'php-worker@4', ['claim_next' => false]);
        self::assertSame(0, $plain->run(fn (Claim $cl): Decision => Decision::complete())->claimed);
    }

    public function testReleasesHeldClaimsWhenTheTimeLimitIsNear(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('deadline');
        $ids = $this->seed($c, $flow, 3);
        $worker = new Worker($c, $flow, 'php-worker@2', ['limit' => 3, 'deadline' => microtime(true) + 0.5]);
        $report = $worker->run(function (Claim $cl, JobContext $ctx) {
            usleep(700000); // the first item eats the time left
            self::assertLessThan(0.0, $ctx->timeLeft());
            return Decision::complete();
        });
        self::assertTrue($report->stoppedForTime);
        self::assertSame(3, $report->claimed);
        self::assertSame(['complete' => 1], $report->dispositions);
        self::assertSame(2, $report->releasedForTime);
        $released = $c->listJobs($flow, 'released');
        self::assertCount(2, $released->entries);
        self::assertSame(0, $c->getItem($ids[1])->item->failures);
        self::assertSame('available', $c->getItem($ids[2])->item->state);
    }

    public function testTimeLimitFromMaxExecutionTime(): void
    {
        $c = $this->client('worker');
        $w = new Worker($c, 'x', 'w', ['time_limit' => 30, 'safety_margin' => 10]);
        $left = $w->timeLeft();
        $since = microtime(true) - (float) $_SERVER['REQUEST_TIME_FLOAT'];
        self::assertEqualsWithDelta(20.0 - $since, $left, 1.0);
        self::assertSame(INF, (new Worker($c, 'x', 'w', ['time_limit' => 0]))->timeLeft());
    }
}
