<?php

declare(strict_types=1);

namespace Verdict\Model;

/** An item (openapi Item): one source, unique on (flow_step_id, source_type, item_identifier). */
final class Item
{
    /** @param array<string, mixed>|null $payload @param array<string, mixed> $raw */
    public function __construct(
        public readonly int $id,
        public readonly string $flowStepId,
        public readonly string $sourceType,
        public readonly string $itemIdentifier,
        public readonly string $state,
        public readonly int $attempts,
        public readonly int $failures,
        public readonly int $defers,
        public readonly int $maxAttempts,
        public readonly int $maxDefers,
        public readonly int $priority,
        public readonly ?array $payload,
        public readonly string $availableAt,
        public readonly ?string $leaseExpiresAt,
        public readonly ?int $currentJobId,
        public readonly ?string $lastReasonCode,
        public readonly ?string $lastReason,
        public readonly array $raw,
    ) {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self(
            (int) $a['id'],
            (string) $a['flow_step_id'],
            (string) $a['source_type'],
            (string) $a['item_identifier'],
            (string) $a['state'],
            (int) ($a['attempts'] ?? 0),
            (int) ($a['failures'] ?? 0),
            (int) ($a['defers'] ?? 0),
            (int) ($a['max_attempts'] ?? 0),
            (int) ($a['max_defers'] ?? 0),
            (int) ($a['priority'] ?? 0),
            \is_array($a['payload'] ?? null) ? $a['payload'] : null,
            (string) ($a['available_at'] ?? ''),
            isset($a['lease_expires_at']) ? (string) $a['lease_expires_at'] : null,
            isset($a['current_job_id']) ? (int) $a['current_job_id'] : null,
            isset($a['last_reason_code']) ? (string) $a['last_reason_code'] : null,
            isset($a['last_reason']) ? (string) $a['last_reason'] : null,
            $a,
        );
    }
}
