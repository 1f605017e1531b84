<?php

declare(strict_types=1);

namespace Verdict\Tests;

use Verdict\Exception\ClaimLostException;
use Verdict\Exception\ConflictException;
use Verdict\Exception\JobFinalizedException;
use Verdict\Exception\NotFoundException;
use Verdict\Model\Claim;

/** Every method of Client against the real server. */
final class ClientTest extends TestCase
{
    public function testSystemEndpoints(): void
    {
        $c = $this->client('reader');
        self::assertTrue($c->healthz());
        self::assertSame('ready', $c->readyz()['status'] ?? null);
        self::assertStringContainsString('# TYPE verdict_items gauge', $c->metrics());
        self::assertTrue($c->supports('POST', '/v1/jobs/{job_id}/release'));
        self::assertFalse($c->supports('DELETE', '/v1/items'));
    }

    public function testItemsRegisterListGetLookup(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('items');
        $reg = $c->registerItems([
            ['flow_step_id' => $flow, 'source_type' => 'rss', 'item_identifier' => 'https://a.example/1', 'payload' => ['title' => 'one'], 'priority' => 5],
            ['flow_step_id' => $flow, 'source_type' => 'rss', 'item_identifier' => 'https://a.example/2'],
        ]);
        self::assertCount(2, $reg);
        self::assertTrue($reg[0]->created);
        self::assertSame('available', $reg[0]->state);
        $again = $c->registerItem($flow, 'rss', 'https://a.example/1');
        self::assertFalse($again->created);
        self::assertSame($reg[0]->id, $again->id);

        $page = $c->listItems($flow, 'available', 1);
        self::assertCount(1, $page->entries);
        self::assertNotNull($page->nextAfter);
        $rest = $c->listItems($flow, null, 10, $page->nextAfter);
        self::assertCount(1, $rest->entries);
        self::assertNull($rest->nextAfter);

        $detail = $c->getItem($reg[0]->id);
        self::assertSame(['title' => 'one'], $detail->item->payload);
        self::assertSame(5, $detail->item->priority);
        self::assertSame('register', $detail->transitions[0]['cause']);

        $known = $c->lookupItems($flow, 'rss', ['https://a.example/2', 'https://a.example/none']);
        self::assertSame(['https://a.example/2'], array_keys($known));
        self::assertSame($reg[1]->id, $known['https://a.example/2']['id']);
    }

    public function testClaimHeartbeatAndEveryDisposition(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('disp');
        $this->seed($c, $flow, 4);
        $claims = $c->claim($flow, 'php-test@1', 4, 120);
        self::assertCount(4, $claims);
        self::assertContainsOnlyInstancesOf(Claim::class, $claims);
        self::assertSame(1, $claims[0]->attempt);
        $lease = $c->heartbeat($claims[0], null, 600);
        self::assertGreaterThan($claims[0]->leaseExpiresAt, $lease);

        $r = $c->complete($claims[0], ['post_id' => 7]);
        self::assertSame('processed', $r->item->state);
        self::assertSame(['post_id' => 7], $r->job->engineData);
        self::assertFalse($r->replayed);
        $again = $c->complete($claims[0], ['post_id' => 7]);
        self::assertTrue($again->replayed);
        self::assertSame('Recorded: completed. The item is processed. Stop now.', $again->toolResultText());
        self::assertTrue($again->toolResultTerminal());

        self::assertSame('rejected', $c->rejectSource($claims[1], 'spam', 'casino links')->item->state);
        $d = $c->deferItem($claims[2], 'low_confidence', 'unsure', true);
        self::assertSame('manual_review', $d->item->state);
        $f = $c->fail($claims[3], 'model crashed', true);
        self::assertSame('deferred', $f->item->state);
        self::assertSame('failed', $f->job->status);
        self::assertSame([], $c->claim($flow, 'php-test@1'));
    }

    public function testLongPollClaim(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('longpoll');
        $t0 = microtime(true);
        self::assertSame([], $c->claim($flow, 'php-test@lp', waitSeconds: 1));
        self::assertGreaterThanOrEqual(0.95, microtime(true) - $t0);
        $this->seed($c, $flow, 1);
        $t0 = microtime(true);
        $claims = $c->claim($flow, 'php-test@lp', waitSeconds: 5);
        self::assertCount(1, $claims);
        self::assertLessThan(1.0, microtime(true) - $t0); // there already: no wait
    }

    public function testBatchDispositions(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('batch');
        $this->seed($c, $flow, 2);
        [$a, $b] = $c->claim($flow, 'php-test@b', 2);
        $res = $c->dispositions([
            ['job_id' => $a->jobId, 'claim_token' => $a->claimToken, 'disposition' => 'complete'],
            ['job_id' => $b->jobId, 'claim_token' => '00000000-0000-4000-8000-000000000000', 'disposition' => 'complete'],
        ]);
        self::assertSame(200, $res[0]->status);
        self::assertSame('processed', $res[0]->result?->item->state);
        self::assertSame(409, $res[1]->status);
        self::assertInstanceOf(ClaimLostException::class, $res[1]->error);
    }

    public function testToolFailureSessionOutcomeAndAdjudication(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('tools');
        $this->seed($c, $flow, 1);
        [$cl] = $c->claim($flow, 'php-test@t');
        $env = $c->toolFailure($cl, 'skills__tldr', ['q' => 'x'], 'iteration_cap', 'deterministic', true);
        self::assertFalse($env->retryable);
        self::assertSame(1, $env->repeatCount);
        self::assertSame('iteration_cap', $env->toArray()['error']);
        self::assertNotSame('', $env->hint);
        self::assertSame("'skills__tldr' failed (deterministic). " . $env->hint, $env->toolResultText());
        self::assertFalse($env->toolResultTerminal());

        $session = ['returncode' => 0, 'stdout' => json_encode(['type' => 'result', 'subtype' => 'success', 'is_error' => false, 'result' => 'done'])];
        $adj = $c->adjudicate($session);
        self::assertSame('succeeded', $adj['outcome']);
        $out = $c->sessionOutcome($cl, $session);
        self::assertSame('processed', $out->item->state);
        self::assertNull($out->toolResultText()); // no model made this call
        self::assertNotNull($out->adjudication);
        $job = $c->getJob($cl->jobId);
        self::assertSame(1, $job->toolFailureCount);
        self::assertSame(['skills__tldr', 1, false], [$job->toolFailures[0]['tool'], $job->toolFailures[0]['count'], $job->toolFailures[0]['retryable']]);
    }

    /** Issue 17: the post-42 story through the client, then a version-aware redrive. */
    public function testCheckpointAndRedrive(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('checkpoint');
        $this->seed($c, $flow, 1);
        [$first] = $c->claim($flow, 'php-test@cp', workerVersion: '1.4.1');
        self::assertNull($first->previousCheckpoint);
        $c->heartbeat($first, checkpoint: ['post_id' => 42]);
        $c->toolFailure($first, 'wiki_upsert', ['post' => 42], 'target_path must stay inside root', 'deterministic');
        $c->disposition($first, 'defer_item', ['reason_code' => 'tool_error', 'retry_after_seconds' => 0]);
        [$second] = $c->claim($flow, 'php-test@cp');
        self::assertSame(['post_id' => 42], $second->previousCheckpoint);
        $job = $c->getJob($first->jobId);
        self::assertSame('1.4.1', $job->workerVersion);
        self::assertSame(['post_id' => 42], $job->checkpoint);
        $c->disposition($second, 'fail', ['error' => 'still failing', 'retryable' => false]);

        $admin = $this->client('admin');
        $sel = ['states' => ['failed'], 'tool_failed' => 'wiki_upsert', 'failed_under_version' => '<1.4.2'];
        $dry = $admin->redrive($flow, $sel, dryRun: true);
        self::assertSame([$first->item->id], $dry);
        self::assertSame($dry, $admin->redrive($flow, $sel, 'fixed in 1.4.2'));
        self::assertSame([], $admin->redrive($flow, ['state' => 'failed', 'failed_under_version' => '<1.4.1'], dryRun: true));
    }

    public function testReads(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('reads');
        $this->seed($c, $flow, 2);
        foreach ($c->claim($flow, 'php-test@r', 2) as $cl) {
            $c->complete($cl);
        }
        $jobs = $c->listJobs($flow, 'completed', null, 1);
        self::assertCount(1, $jobs->entries);
        self::assertNotNull($jobs->nextAfter);
        self::assertCount(2, $c->listJobs($flow, null, '2020-01-01T00:00:00Z')->entries);
        $job = $c->getJob($jobs->entries[0]->id);
        self::assertSame('complete', $job->disposition);
        $stats = $c->stats($flow);
        self::assertSame(2, $stats->flowStep($flow)?->items['processed']);
        self::assertSame(2, $stats->flowStep($flow)?->jobsLastHour['completed']);
        foreach (['openai', 'anthropic', 'mcp'] as $format) {
            $defs = $c->toolDefinitions($format);
            self::assertSame($format, $defs->format);
            self::assertCount(5, $defs->tools);
            self::assertSame('fail', $defs->dispositions['fail_item']);
        }
        self::assertContains($flow, array_map(static fn ($f) => $f->flowStepId, $c->flowSteps()));
    }

    public function testAdminCalls(): void
    {
        $c = $this->client('admin');
        $flow = $this->flow('admin');
        [$id1, $id2] = $this->seed($c, $flow, 2, ['max_defers' => 1]);
        self::assertTrue($c->pauseFlowStep($flow)->paused);
        self::assertSame([], $c->claim($flow, 'php-test@a'));
        self::assertFalse($c->resumeFlowStep($flow)->paused);
        foreach ($c->claim($flow, 'php-test@a', 2) as $cl) {
            $c->deferItem($cl, 'tool_error'); // out of defer budget: manual_review
        }
        self::assertSame('available', $c->requeue($id1, 'second look', true)->state);
        self::assertSame(1, $c->requeueBulk($flow, 'manual_review', null, 10, 'all of them'));
        self::assertSame(0, $c->requeueBulk($flow, 'manual_review'));
        self::assertSame('available', $c->getItem($id2)->item->state);

        // an admin release: the holder's next write is claim_lost
        [$cl] = $c->claim($flow, 'php-test@a');
        $r = $c->releaseItem($cl->item->id, 'host died');
        self::assertSame('released', $r->job->status);
        self::assertSame('available', $r->item->state);
        try {
            $c->complete($cl);
            self::fail('the released claim still held');
        } catch (ClaimLostException $e) {
            self::assertSame(409, $e->httpStatus);
        }
        $this->expectException(ConflictException::class);
        $c->releaseItem($cl->item->id);
    }

    public function testHolderRelease(): void
    {
        $c = $this->client('worker');
        $flow = $this->flow('release');
        [$id] = $this->seed($c, $flow, 1);
        [$cl] = $c->claim($flow, 'php-test@rel');
        $r = $c->release($cl, 'max_execution_time');
        self::assertSame('released', $r->job->status);
        self::assertSame(0, $r->item->failures);
        self::assertTrue($c->release($cl, 'max_execution_time')->replayed);
        try {
            $c->complete($cl);
            self::fail('a released job took a disposition');
        } catch (JobFinalizedException $e) {
            self::assertSame('job_finalized', $e->errorCode);
        }
        [$again] = $c->claim($flow, 'php-test@rel');
        self::assertSame($id, $again->item->id);
        self::assertSame(2, $again->attempt);
    }

    /** POST /v1/items/{id}/resolve and GET /v1/whoami come with issue 19. */
    public function testResolveAndWhoamiWhenServed(): void
    {
        $c = $this->client('admin');
        if (!$c->supports('POST', '/v1/items/{item_id}/resolve')) {
            try {
                $c->resolve(1, 'rejected', 'junk');
                self::fail('resolve answered on a server without it');
            } catch (NotFoundException $e) {
                self::assertSame(404, $e->httpStatus);
            }
            return;
        }
        self::assertSame('admin', $c->whoami()['role']);
        $flow = $this->flow('resolve');
        [$id] = $this->seed($c, $flow, 1);
        [$cl] = $c->claim($flow, 'php-test@res');
        $c->deferItem($cl, 'low_confidence', null, true);
        self::assertSame('rejected', $c->resolve($id, 'rejected', 'junk source')->state);
    }
    /** A model's request_review, the editor's answer, and the next claim carrying it. */
    public function testReviewQueueAndAnswer(): void
    {
        $c = $this->client('admin');
        $flow = $this->flow('review');
        [$id, $other] = $this->seed($c, $flow, 2);
        $claims = $c->claim($flow, 'php-test@rev', 2);
        $byId = [];
        foreach ($claims as $cl) {
            $byId[$cl->item->id] = $cl;
        }
        self::assertSame('manual_review', $c->disposition($byId[$id], 'request_review', ['question' => 'May I cite the 2019 figures?'])->item->state);
        $c->deferItem($byId[$other], 'low_confidence', null, true);
        $q = $c->reviews($flow);
        self::assertSame([['flow_step_id' => $flow, 'waiting' => 2, 'questions' => 1]], array_map(
            static fn (array $f): array => array_intersect_key($f, ['flow_step_id' => 1, 'waiting' => 1, 'questions' => 1]),
            $q['flow_steps']
        ));
        $asked = array_values(array_filter($q['reviews'], static fn (array $r): bool => $r['item_id'] === $id));
        self::assertSame('May I cite the 2019 figures?', $asked[0]['question']);
        try {
            $c->answerReview($id, 'retry');
            self::fail('a retry without an answer was accepted');
        } catch (\Verdict\Exception\VerdictException $e) {
            self::assertSame(400, $e->httpStatus);
        }
        self::assertSame('available', $c->answerReview($id, 'retry', 'Yes, cite them.')->state);
        self::assertSame('rejected', $c->answerReview($other, 'rejected')->state);
        try {
            $c->answerReview($id, 'processed');
            self::fail('an available item was answered');
        } catch (\Verdict\Exception\ConflictException $e) {
            self::assertSame(409, $e->httpStatus);
        }
        [$next] = $c->claim($flow, 'php-test@rev');
        self::assertSame($id, $next->item->id);
        self::assertSame('May I cite the 2019 figures?', $next->review['question'] ?? null);
        self::assertSame('Yes, cite them.', $next->review['answer'] ?? null);
        self::assertSame([], $c->reviews($flow)['reviews']);
    }

    public function testFlowControl(): void
    {
        $admin = $this->client('admin');
        $w = $this->client('worker');
        $flow = $this->flow('limits');
        $key = 'model:' . $flow;
        $set = $admin->putLimit($key, concurrency: 1, rate: ['per' => 'minute', 'count' => 60, 'burst' => 5], tokensPerMinute: 1000);
        self::assertSame(1, $set['concurrency']);
        self::assertSame('minute', $set['rate']['per']);
        self::assertContains($key, array_column($w->limits(), 'key'));
        $this->seed($w, $flow, 3);
        $got = $w->claim($flow, 'php', 3, limitKeys: [$key], estimatedTokens: 100);
        self::assertCount(1, $got); // concurrency 1
        self::assertSame(1, $w->getLimit($key)['in_flight']);
        self::assertSame(100, $w->getLimit($key)['tokens_reserved']);
        self::assertSame([], $w->claim($flow, 'php', 1, limitKeys: [$key]));

        $env = $w->toolFailure($got[0], 'llm__generate', [], 'HTTP 429 Too Many Requests', limitKey: $key, retryAfterSeconds: 30);
        self::assertStringContainsString('rate_limited', $env->hint);
        self::assertTrue($w->getLimit($key)['throttled']);
        $r = $w->deferItem($got[0], 'rate_limited', 'the provider answered 429');
        self::assertSame('deferred', $r->item->state);
        self::assertSame(0, $w->getItem($got[0]->item->id)->item->defers);
        self::assertSame([], $w->claim($flow, 'php', 1, limitKeys: [$key])); // throttled
        self::assertTrue($w->backoff('provider:' . $flow, 5, 'overloaded')['throttled']);

        self::assertSame($key, $admin->deleteLimit($key));
        $this->expectException(\Verdict\Exception\NotFoundException::class);
        $w->getLimit($key);
    }

    public function testPriorityAndFairKey(): void
    {
        $admin = $this->client('admin');
        $w = $this->client('worker');
        $flow = $this->flow('fair');
        self::assertSame('site', $admin->setFairKey($flow, 'site')->fairKey);
        foreach (['big-1' => 'site:big', 'big-2' => 'site:big', 'small-1' => 'site:small'] as $id => $site) {
            $w->registerItem($flow, 'rss', "https://$id.example/", null, ['limit_keys' => [$site], 'priority' => 3]);
        }
        $first = $w->claim($flow, 'php')[0];
        $r = $w->disposition($first, 'complete', ['claim_next' => 1, 'limit_keys' => ['provider:' . $flow], 'estimated_tokens' => 10]);
        $next = Claim::fromArray($r->raw['claims'][0]); // the other site's turn
        self::assertNotSame(str_contains($first->item->itemIdentifier, 'big'), str_contains($next->item->itemIdentifier, 'big'));
        self::assertSame(3, $next->item->priority);
        self::assertContains('provider:' . $flow, $r->raw['claims'][0]['limit_keys']);
        self::assertNull($admin->setFairKey($flow, null)->fairKey);
        $this->expectException(\Verdict\Exception\InvalidRequestException::class);
        $w->registerItem($flow, 'rss', 'https://too-high.example/', null, ['priority' => 1001]);
    }

    public function testUsageLimitKeysAndRateLimited(): void
    {
        $admin = $this->client('admin');
        $w = $this->client('worker');
        $flow = $this->flow('usage');
        $model = 'model:' . $flow;
        $site = 'site:' . $flow;
        $admin->putLimit($model, concurrency: 5, tokensPerMinute: 100000);
        $this->seed($w, $flow, 5, ['limit_keys' => [$site]]);
        $got = $w->claim($flow, 'php', 2, limitKeys: [$model], estimatedTokens: 500);
        self::assertCount(2, $got);
        self::assertSame([$model, $site], $got[0]->limitKeys); // the claim's and the item's, sorted
        self::assertSame(1000, $w->getLimit($model)['tokens_reserved']);
        $w->complete($got[0], ['ok' => true], usage: \Verdict\Client::usage(300, 100, 0.25, 'gpt-4o'));
        self::assertSame(900, $w->getLimit($model)['tokens_reserved']); // its 500 settled to the 400 used
        $w->fail($got[1], 'timeout', true, usage: \Verdict\Client::usage(10, 0));

        // a Worker reports what its callback's model calls used with the decision
        $worker = new \Verdict\Worker($w, $flow, 'php-w', ['limit' => 1, 'limit_keys' => [$model], 'estimated_tokens' => 50]);
        $report = $worker->run(static function ($claim, \Verdict\JobContext $ctx) {
            $ctx->reportUsage(20, 5, 0.01);
            $ctx->reportUsage(30, 5, 0.01, 'gpt-4o-mini');
            return \Verdict\Decision::complete();
        }, 1);
        self::assertSame(1, $report->claimed);
        $report = $worker->run(static fn ($claim) => \Verdict\Decision::complete()->withUsage(1, 1), 1);
        self::assertSame(1, $report->claimed);

        $stats = $w->stats($flow);
        $u = $stats->flowStep($flow)->usage;
        self::assertSame(3 + 1, (int) $u['jobs']);
        self::assertSame(300 + 10 + 50 + 1, (int) $u['input_tokens']);
        self::assertSame(100 + 0 + 10 + 1, (int) $u['output_tokens']);
        self::assertEqualsWithDelta(0.27, (float) $u['cost_usd'], 1e-9);
        self::assertSame(361, (int) $stats->totalUsage['input_tokens']);
        self::assertSame([$model, $site], array_column($stats->usageByKey, 'key'));
        self::assertSame(472, (int) $stats->usageByKey[1]['input_tokens'] + (int) $stats->usageByKey[1]['output_tokens']);
        self::assertStringContainsString('verdict_item_usage_tokens_total{flow_step_id="' . $flow . '"} 472', $admin->metrics());

        // a provider's 429: backoff, then a rate_limited deferral that spends no budget
        [$c] = $w->claim($flow, 'php', 1, limitKeys: [$model]);
        self::assertTrue($w->backoff($model, 30, 'HTTP 429')['throttled']);
        $r = $w->getItem($c->item->id);
        $res = $w->disposition($c, 'defer_item', \Verdict\Decision::rateLimited('the provider answered 429')->withUsage(5, 0)->fields);
        self::assertSame('deferred', $res->item->state);
        self::assertSame($r->item->defers, $w->getItem($c->item->id)->item->defers);
        self::assertSame([], $w->claim($flow, 'php', 1, limitKeys: [$model])); // throttled
    }
}
