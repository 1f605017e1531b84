<?php

declare(strict_types=1);

namespace Verdict\Model;

/**
 * One page of a keyset-paginated list (items or jobs); pass nextAfter as `after` for the
 * next page (null: this was the last).
 *
 * @template T
 */
final class Page
{
    /** @param list<T> $entries */
    public function __construct(public readonly array $entries, public readonly ?int $nextAfter)
    {
    }
}
