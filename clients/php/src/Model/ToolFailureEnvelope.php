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
        return new self(
            (string) $a['error'],
            (bool) $a['retryable'],
            (string) $a['tool'],
            (int) $a['repeat_count'],
            (string) $a['kind'],
            (string) $a['hint'],
            $a
        );
    }

    /** @return array<string, mixed> the envelope as verdict sent it (for the model) */
    public function toArray(): array
    {
        return $this->raw;
    }

    /**
     * The text to hand back to the model as the tool call's result (`tool_result.text`; null
     * when the answer has none: a session outcome or a release, or an older server).
     */
    public function toolResultText(): ?string
    {
        $t = $this->raw['tool_result']['text'] ?? null;
        return \is_string($t) ? $t : null;
    }

    /** Whether the agent loop should end its turn after this answer (`tool_result.terminal`). */
    public function toolResultTerminal(): bool
    {
        return ($this->raw['tool_result']['terminal'] ?? false) === true;
    }
}
