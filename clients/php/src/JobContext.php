<?php

declare(strict_types=1);

namespace Verdict;

use Verdict\Model\Claim;
use Verdict\Model\ToolFailureEnvelope;

/**
 * Handed to a Worker callback with its claim: keep the lease alive during long work
 * (heartbeat, or tick() which heartbeats only when due), report a tool failure, and ask how
 * much time the PHP process has left.
 */
final class JobContext
{
    private float $lastBeat;

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

    /** Seconds before the worker's deadline (INF without a PHP time limit). */
    public function timeLeft(): float
    {
        return ($this->timeLeft)();
    }
}
