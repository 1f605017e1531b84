<?php

declare(strict_types=1);

namespace Verdict;

use Verdict\Exception\ClaimLostException;
use Verdict\Exception\VerdictException;
use Verdict\Model\Claim;

/**
 * The claim -> callback -> disposition loop. The callback gets the Claim and a JobContext
 * and returns a Decision (or an array for Decision::fromArray); an exception it throws
 * becomes a retryable `fail` disposition, a null answer releases the claim (and the run ends
 * when the queue comes round to an item it released, instead of spinning on it).
 *
 * PHP's time limit: the worker keeps a deadline (max_execution_time counted from the
 * request's start, minus `safety_margin`; or `deadline` given). It claims no more once the
 * deadline is near, releases (POST /v1/jobs/{id}/release) every claim it holds but has not
 * started, and, should the process die anyway, a shutdown function releases the claim in
 * hand, so no item waits for its lease to pass. Claims held while another item is processed
 * are kept alive with heartbeats between items.
 *
 * The cycle is dispose-and-claim-next: the disposition of the last item of a batch claims the
 * next batch in the same call (claim_next), so a steady worker makes one request per batch
 * instead of two. Option `claim_next` => false claims with a separate call each time.
 */
final class Worker
{
    private int $limit;
    /** @var list<string>|null */
    private ?array $limitKeys;
    private ?int $estimatedTokens;
    private ?int $leaseSeconds;
    private ?string $workerVersion;
    private float $heartbeatEvery;
    private float $deadline;
    /** @var array<int, Claim> claims held and not finished, by job id */
    private array $held = [];
    /** @var array<int, true> items this run released (they are claimable again at once) */
    private array $released = [];
    private bool $shutdownRegistered = false;
    private bool $claimNext;
    /** @var list<Claim>|null what the last disposition claimed for us (claim_next), or null */
    private ?array $next = null;

    /**
     * @param array{limit?: int, lease_seconds?: int, heartbeat_every?: float, safety_margin?: float,
     *              deadline?: float, time_limit?: int, worker_version?: string, claim_next?: bool,
     *              limit_keys?: list<string>, estimated_tokens?: int} $options limit_keys: the
     *              keys every claim names (the worker's provider and model); estimated_tokens:
     *              reserved per item on their tokens_per_minute
     */
    public function __construct(private readonly Client $client, private readonly string $flowStepId, private readonly string $workerId, array $options = [])
    {
        $this->limit = (int) ($options['limit'] ?? 5);
        $this->leaseSeconds = isset($options['lease_seconds']) ? (int) $options['lease_seconds'] : null;
        $this->workerVersion = isset($options['worker_version']) ? (string) $options['worker_version'] : null;
        $this->heartbeatEvery = (float) ($options['heartbeat_every'] ?? 60.0);
        $this->limitKeys = isset($options['limit_keys']) ? array_values($options['limit_keys']) : null;
        $this->estimatedTokens = isset($options['estimated_tokens']) ? (int) $options['estimated_tokens'] : null;
        $this->claimNext = (bool) ($options['claim_next'] ?? true);
        $margin = (float) ($options['safety_margin'] ?? 10.0);
        $limit = (int) ($options['time_limit'] ?? (int) ini_get('max_execution_time'));
        $start = (float) ($_SERVER['REQUEST_TIME_FLOAT'] ?? microtime(true));
        $this->deadline = (float) ($options['deadline'] ?? ($limit > 0 ? $start + $limit - $margin : INF));
    }

    public function timeLeft(): float
    {
        return $this->deadline - microtime(true);
    }

    /**
     * Claim and process until nothing is claimable, $maxItems were processed, or the
     * deadline is near.
     *
     * @param callable(Claim, JobContext): (Decision|array<string, mixed>|null) $process
     */
    public function run(callable $process, int $maxItems = PHP_INT_MAX): WorkerReport
    {
        $this->registerShutdown();
        $claimed = 0;
        $counts = [];
        $errors = [];
        $releasedForTime = 0;
        $stopped = false;
        while ($claimed < $maxItems) {
            if ($this->timeLeft() <= 0) {
                $stopped = true;
                foreach ($this->next ?? [] as $c) { // claimed by the last disposition: give back
                    $this->held[$c->jobId] = $c;
                }
                $this->next = null;
                $releasedForTime += $this->releaseHeld('the PHP time limit is near', $errors);
                break;
            }
            $claims = $this->next ?? $this->client->claim($this->flowStepId, $this->workerId, min($this->limit, $maxItems - $claimed), $this->leaseSeconds, workerVersion: $this->workerVersion, limitKeys: $this->limitKeys, estimatedTokens: $this->estimatedTokens);
            $this->next = null;
            if (!$claims) {
                break;
            }
            $claimed += \count($claims);
            $again = false;
            foreach ($claims as $c) {
                $this->held[$c->jobId] = $c;
                $again = $again || isset($this->released[$c->item->id]);
            }
            if ($again) { // the queue came round to an item given back in this run: stop here
                $counts['release'] = ($counts['release'] ?? 0) + $this->releaseHeld('released earlier in this run', $errors);
                break;
            }
            foreach ($claims as $i => $c) {
                if ($this->timeLeft() <= 0) {
                    $stopped = true;
                    $releasedForTime += $this->releaseHeld('the PHP time limit is near', $errors);
                    break 2;
                }
                $last = $i === array_key_last($claims) && $this->claimNext;
                $d = $this->processOne($c, $process, $errors, $last ? min($this->limit, $maxItems - $claimed) : 0);
                if ($d !== null) {
                    $counts[$d] = ($counts[$d] ?? 0) + 1;
                }
                $this->beatHeld($errors);
            }
        }
        return new WorkerReport($claimed, $counts, $releasedForTime, $errors, $stopped);
    }

    /** @param list<string> $errors */
    private function processOne(Claim $c, callable $process, array &$errors, int $claimNext = 0): ?string
    {
        $ctx = new JobContext($c, $this->client, $this->heartbeatEvery, fn (): float => $this->timeLeft());
        try {
            $answer = $process($c, $ctx);
            $decision = match (true) {
                $answer instanceof Decision => $answer,
                \is_array($answer) => Decision::fromArray($answer),
                default => Decision::release('the callback made no decision'),
            };
        } catch (\Throwable $e) {
            $decision = Decision::fail(sprintf('%s: %s', $e::class, $e->getMessage()), true);
        }
        try {
            if ($decision->disposition === 'release') {
                $this->client->release($c, $decision->fields['reason'] ?? null);
                $this->released[$c->item->id] = true;
            } else {
                $fields = $decision->fields;
                if (!isset($fields['usage']) && $ctx->usage() !== null) {
                    $fields['usage'] = $ctx->usage(); // what the callback's model calls used
                }
                if ($claimNext > 0) { // the next claims name the worker's keys too
                    $fields += array_filter(['limit_keys' => $this->limitKeys, 'estimated_tokens' => $this->estimatedTokens], static fn ($v) => $v !== null);
                }
                $r = $this->client->disposition($c, $decision->disposition, $fields, claimNext: max(0, $claimNext), leaseSeconds: $this->leaseSeconds);
                if ($claimNext > 0 && $r->hasClaims()) {
                    $this->next = $r->claims(); // empty: nothing claimable, the run ends
                }
            }
            return $decision->disposition;
        } catch (ClaimLostException $e) {
            $errors[] = "job {$c->jobId}: claim lost, result discarded ({$e->getMessage()})";
        } catch (VerdictException $e) {
            $errors[] = "job {$c->jobId}: {$e->getMessage()}";
        } finally {
            unset($this->held[$c->jobId]);
        }
        return null;
    }

    /** Heartbeat the claims still waiting their turn. @param list<string> $errors */
    private function beatHeld(array &$errors): void
    {
        foreach ($this->held as $id => $c) {
            try {
                $this->client->heartbeat($c, null, $this->leaseSeconds);
            } catch (VerdictException $e) {
                unset($this->held[$id]);
                $errors[] = "job $id: heartbeat failed ({$e->getMessage()})";
            }
        }
    }

    /** Give back every claim held and not started. @param list<string> $errors */
    private function releaseHeld(string $reason, array &$errors): int
    {
        $n = 0;
        foreach ($this->held as $id => $c) {
            try {
                $this->client->release($c, $reason);
                $n++;
            } catch (VerdictException $e) {
                $errors[] = "job $id: release failed ({$e->getMessage()})";
            }
            unset($this->held[$id]);
        }
        return $n;
    }

    private function registerShutdown(): void
    {
        if ($this->shutdownRegistered) {
            return;
        }
        $this->shutdownRegistered = true;
        register_shutdown_function(function (): void {
            $errors = [];
            $this->releaseHeld('the PHP process ended before the item was finished', $errors);
        });
    }
}
