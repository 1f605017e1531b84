<?php

declare(strict_types=1);

namespace Verdict\Model;

final class FlowStep
{
    public function __construct(
        public readonly string $flowStepId,
        public readonly bool $paused,
        public readonly string $createdAt,
        public readonly string $updatedAt,
        public readonly ?string $fairKey = null,
    ) {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self(
            (string) $a['flow_step_id'],
            (bool) $a['paused'],
            (string) $a['created_at'],
            (string) $a['updated_at'],
            isset($a['fair_key']) ? (string) $a['fair_key'] : null
        );
    }
}
