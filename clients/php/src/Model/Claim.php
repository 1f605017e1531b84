<?php

declare(strict_types=1);

namespace Verdict\Model;

/**
 * One claimed item: the job, the token that fences every write on it, and the item. With
 * previousCheckpoint: the last checkpoint an earlier attempt at the item sent with a heartbeat
 * (null when none did), e.g. the id of the post it already created. With review: an editor's
 * answer to the item's request_review ({question, answer, by, at}) for this attempt to act on.
 */
final class Claim
{
    /** @param array<string, mixed>|null $previousCheckpoint @param array<string, mixed>|null $review */
    public function __construct(
        public readonly int $jobId,
        public readonly string $claimToken,
        public readonly int $attempt,
        public readonly string $leaseExpiresAt,
        public readonly Item $item,
        public readonly ?array $previousCheckpoint = null,
        public readonly ?array $review = null,
        /** @var list<string>|null the limit keys the job holds: the claim's and the item's */
        public readonly ?array $limitKeys = null,
    ) {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self(
            (int) $a['job_id'],
            (string) $a['claim_token'],
            (int) $a['attempt'],
            (string) $a['lease_expires_at'],
            Item::fromArray($a['item']),
            \is_array($a['previous_checkpoint'] ?? null) ? $a['previous_checkpoint'] : null,
            \is_array($a['review'] ?? null) ? $a['review'] : null,
            \is_array($a['limit_keys'] ?? null) ? array_values($a['limit_keys']) : null
        );
    }
}
