<?php

declare(strict_types=1);

namespace Verdict\Model;

/** One entry of a registration's answer; created is false when the item existed already. */
final class RegisteredItem
{
    public function __construct(
        public readonly int $id,
        public readonly string $flowStepId,
        public readonly string $sourceType,
        public readonly string $itemIdentifier,
        public readonly string $state,
        public readonly bool $created,
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
            (bool) $a['created']
        );
    }
}
