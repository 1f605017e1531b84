<?php

declare(strict_types=1);

namespace Verdict\Model;

/** The counts of one flow step from GET /v1/stats. */
final class FlowStepStats
{
    /**
     * @param array<string, int> $items by state
     * @param array<string, int> $jobsLastHour by status
     * @param array<string, int> $jobsLastDay by status
     */
    public function __construct(
        public readonly string $flowStepId,
        public readonly bool $paused,
        public readonly array $items,
        public readonly array $jobsLastHour,
        public readonly array $jobsLastDay,
        public readonly ?int $oldestClaimableAgeSeconds,
        public readonly int $stuckClaims,
        /** @var array{jobs?: int, input_tokens?: int, output_tokens?: int, cost_usd?: float|int} the model usage its dispositions reported */
        public readonly array $usage = [],
    ) {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self(
            (string) $a['flow_step_id'],
            (bool) $a['paused'],
            $a['items'],
            $a['jobs_last_hour'],
            $a['jobs_last_day'],
            isset($a['oldest_claimable_age_seconds']) ? (int) $a['oldest_claimable_age_seconds'] : null,
            (int) $a['stuck_claims'],
            $a['usage'] ?? []
        );
    }
}
