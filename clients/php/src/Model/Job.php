<?php

declare(strict_types=1);

namespace Verdict\Model;

/** A job (openapi Job): one claim of one item. */
final class Job
{
    /**
     * @param array<string, mixed> $engineData
     * @param array<string, mixed>|null $adjudication
     * @param list<array{tool: string, count: int, last_error: string, retryable: bool}> $toolFailures by tool
     * @param array<string, mixed> $raw
     * @param array<string, mixed>|null $checkpoint only from Client::job (GET /v1/jobs/{id})
     */
    public function __construct(
        public readonly int $id,
        public readonly int $itemId,
        public readonly string $flowStepId,
        public readonly string $workerId,
        public readonly int $attempt,
        public readonly string $status,
        public readonly ?string $disposition,
        public readonly ?string $reasonCode,
        public readonly ?string $reason,
        public readonly string $claimedAt,
        public readonly ?string $finishedAt,
        public readonly array $engineData,
        public readonly ?array $adjudication,
        public readonly array $toolFailures,
        public readonly int $toolFailureCount,
        public readonly array $raw,
        public readonly ?string $workerVersion = null,
        public readonly ?array $checkpoint = null,
    ) {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self(
            (int) $a['id'],
            (int) $a['item_id'],
            (string) $a['flow_step_id'],
            (string) $a['worker_id'],
            (int) $a['attempt'],
            (string) $a['status'],
            isset($a['disposition']) ? (string) $a['disposition'] : null,
            isset($a['reason_code']) ? (string) $a['reason_code'] : null,
            isset($a['reason']) ? (string) $a['reason'] : null,
            (string) ($a['claimed_at'] ?? ''),
            isset($a['finished_at']) ? (string) $a['finished_at'] : null,
            \is_array($a['engine_data'] ?? null) ? $a['engine_data'] : [],
            \is_array($a['adjudication'] ?? null) ? $a['adjudication'] : null,
            array_values($a['tool_failures']['by_tool'] ?? []),
            (int) ($a['tool_failures']['count'] ?? 0),
            $a,
            isset($a['worker_version']) ? (string) $a['worker_version'] : null,
            \is_array($a['checkpoint'] ?? null) ? $a['checkpoint'] : null,
        );
    }
}
