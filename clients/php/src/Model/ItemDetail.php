<?php

declare(strict_types=1);

namespace Verdict\Model;

/** GET /v1/items/{id}: the item and its last 100 transitions, newest first. */
final class ItemDetail
{
    /** @param list<array<string, mixed>> $transitions */
    public function __construct(public readonly Item $item, public readonly array $transitions)
    {
    }
}
