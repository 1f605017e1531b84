<?php

declare(strict_types=1);

namespace Verdict\Model;

/**
 * The answer of a job write: a disposition, a session outcome or a release. `replayed` is
 * true when verdict returned the stored answer of an identical earlier call; `disposition`
 * is what was applied (null for a release or an outcome), `adjudication` only for outcomes.
 */
final class JobResult
{
    /**
     * @param array<string, mixed>|null $adjudication
     * @param array<string, mixed> $raw
     */
    public function __construct(
        public readonly Job $job,
        public readonly Item $item,
        public readonly bool $replayed,
        public readonly ?string $disposition,
        public readonly ?array $adjudication,
        public readonly array $raw,
    ) {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self(
            Job::fromArray($a['job']),
            Item::fromArray($a['item']),
            (bool) ($a['replayed'] ?? false),
            isset($a['disposition']) ? (string) $a['disposition'] : null,
            \is_array($a['adjudication'] ?? null) ? $a['adjudication'] : null,
            $a
        );
    }

    /**
     * The claims a disposition with claim_next made for the same worker (its next items;
     * empty when it asked for none or none was claimable).
     *
     * @return list<Claim>
     */
    public function claims(): array
    {
        $claims = $this->raw['claims'] ?? [];
        return \is_array($claims) ? array_values(array_map(static fn (array $c): Claim => Claim::fromArray($c), $claims)) : [];
    }

    /** Whether the answer carries claim_next's claims (the call asked for some). */
    public function hasClaims(): bool
    {
        return \is_array($this->raw['claims'] ?? null);
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
