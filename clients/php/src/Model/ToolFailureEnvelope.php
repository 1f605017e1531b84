<?php

declare(strict_types=1);

namespace Verdict\Model;

/**
 * What verdict answers for a tool failure: the tool result to hand back to the model
 * verbatim (`toArray()`), whether to retry the tool, and the hint for the model.
 */
final class ToolFailureEnvelope
{
    /** @param array<string, mixed> $raw */
    public function __construct(
        public readonly string $error,
        public readonly bool $retryable,
        public readonly string $tool,
        public readonly int $repeatCount,
        public readonly string $kind,
        public readonly string $hint,
        public readonly array $raw,
    ) {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self((string) $a['error'], (bool) $a['retryable'], (string) $a['tool'],
            (int) $a['repeat_count'], (string) $a['kind'], (string) $a['hint'], $a);
    }

    /** @return array<string, mixed> the envelope as verdict sent it (for the model) */
    public function toArray(): array
    {
        return $this->raw;
    }
}
