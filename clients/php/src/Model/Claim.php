<?php

declare(strict_types=1);

namespace Verdict\Model;

/** One claimed item: the job, the token that fences every write on it, and the item. */
final class Claim
{
    public function __construct(
        public readonly int $jobId,
        public readonly string $claimToken,
        public readonly int $attempt,
        public readonly string $leaseExpiresAt,
        public readonly Item $item,
    ) {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self((int) $a['job_id'], (string) $a['claim_token'], (int) $a['attempt'],
            (string) $a['lease_expires_at'], Item::fromArray($a['item']));
    }
}
