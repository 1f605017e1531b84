<?php

declare(strict_types=1);

namespace Verdict;

use Verdict\Model\Claim;
use Verdict\Model\ToolFailureEnvelope;

/**
 * Handed to a Worker callback with its claim: keep the lease alive during long work
 * (heartbeat, or tick() which heartbeats only when due), record progress (checkpoint; the
 * next attempt reads it as previousCheckpoint()), report a tool failure, and ask how much
 * time the PHP process has left.
 */
final class JobContext
{
    private float $lastBeat;
    /** @var array<string, mixed>|null */
    private ?array $usage = null;

    /** @param \Closure(): float $timeLeft */
    public function __construct(
        public readonly Claim $claim,
        private readonly Client $client,
        private readonly float $heartbeatEvery,
        private readonly \Closure $timeLeft,
    ) {
        $this->lastBeat = microtime(true);
    }

    public function heartbeat(): string
    {
        $this->lastBeat = microtime(true);
        return $this->client->heartbeat($this->claim);
    }

    /**
     * Record progress now (a heartbeat carrying it): what this attempt created, so that a
     * retry updates it instead of creating it again.
     *
     * @param array<string, mixed> $progress
     */
    public function checkpoint(array $progress): string
    {
        $this->lastBeat = microtime(true);
        return $this->client->heartbeat($this->claim, checkpoint: $progress);
    }

    /**
     * The last checkpoint of an earlier attempt at this item, or null.
     *
     * @return array<string, mixed>|null
     */
    public function previousCheckpoint(): ?array
    {
        return $this->claim->previousCheckpoint;
    }

    /** Heartbeat when the last one is older than the worker's heartbeat interval. */
    public function tick(): void
    {
        if (microtime(true) - $this->lastBeat >= $this->heartbeatEvery) {
            $this->heartbeat();
        }
    }

    public function toolFailure(string $tool, mixed $args, string $error, string $kind = 'unknown', bool $required = false): ToolFailureEnvelope
    {
        return $this->client->toolFailure($this->claim, $tool, $args, $error, $kind, $required);
    }

    /**
     * Adds the tokens (and cost) of one model call to the job's usage. The Worker reports the
     * sum with the disposition unless the decision carries its own usage.
     */
    public function reportUsage(int $inputTokens, int $outputTokens, ?float $costUsd = null, ?string $model = null): void
    {
        $u = $this->usage ?? ['input_tokens' => 0, 'output_tokens' => 0];
        $u['input_tokens'] += $inputTokens;
        $u['output_tokens'] += $outputTokens;
        if ($costUsd !== null) {
            $u['cost_usd'] = ($u['cost_usd'] ?? 0.0) + $costUsd;
        }
        if ($model !== null) {
            $u['model'] = $model;
        }
        $this->usage = $u;
    }

    /** @return array<string, mixed>|null the usage reported so far (reportUsage), null when none */
    public function usage(): ?array
    {
        return $this->usage;
    }

    /** Seconds before the worker's deadline (INF without a PHP time limit). */
    public function timeLeft(): float
    {
        return ($this->timeLeft)();
    }
}
