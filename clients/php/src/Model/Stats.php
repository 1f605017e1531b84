<?php

declare(strict_types=1);

namespace Verdict\Model;

/** GET /v1/stats. */
final class Stats
{
    /**
     * @param list<FlowStepStats> $flowSteps
     * @param array<string, int> $totalItems by state
     */
    public function __construct(
        public readonly string $generatedAt,
        public readonly array $flowSteps,
        public readonly array $totalItems,
        /** @var array{jobs?: int, input_tokens?: int, output_tokens?: int, cost_usd?: float|int} usage of the flow steps shown */
        public readonly array $totalUsage = [],
        /** @var list<array{key: string, jobs: int, input_tokens: int, output_tokens: int, cost_usd: float|int}> per limit key */
        public readonly array $usageByKey = [],
    ) {
    }

    public function flowStep(string $id): ?FlowStepStats
    {
        foreach ($this->flowSteps as $fs) {
            if ($fs->flowStepId === $id) {
                return $fs;
            }
        }
        return null;
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self(
            (string) $a['generated_at'],
            array_map(static fn (array $f): FlowStepStats => FlowStepStats::fromArray($f), $a['flow_steps']),
            $a['totals']['items'] ?? [],
            $a['totals']['usage'] ?? [],
            $a['usage_by_key'] ?? []
        );
    }
}
