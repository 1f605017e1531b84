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
            $a['totals']['items'] ?? []
        );
    }
}
