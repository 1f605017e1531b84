<?php

declare(strict_types=1);

namespace Verdict;

/**
 * What a Worker callback decided about one item: a disposition with its fields, or a release
 * of the claim without a verdict (the item is offered again at once, no budget spent).
 */
final class Decision
{
    /** @param array<string, mixed> $fields */
    private function __construct(public readonly string $disposition, public readonly array $fields = [])
    {
    }

    /** @param array<string, mixed> $engineData */
    public static function complete(array $engineData = []): self
    {
        return new self('complete', $engineData ? ['engine_data' => $engineData] : []);
    }

    public static function reject(string $reasonCode, ?string $reason = null): self
    {
        return new self('reject_source', array_filter(['reason_code' => $reasonCode, 'reason' => $reason], static fn ($v) => $v !== null));
    }

    public static function defer(string $reasonCode, ?string $reason = null, bool $manualReview = false, ?int $retryAfterSeconds = null): self
    {
        return new self('defer_item', ['reason_code' => $reasonCode, 'manual_review' => $manualReview]
            + array_filter(['reason' => $reason, 'retry_after_seconds' => $retryAfterSeconds], static fn ($v) => $v !== null));
    }

    public static function fail(string $error, bool $retryable = true): self
    {
        return new self('fail', ['error' => $error, 'retryable' => $retryable]);
    }

    public static function release(?string $reason = null): self
    {
        return new self('release', $reason !== null ? ['reason' => $reason] : []);
    }

    /**
     * A decision given as an array, e.g. from a WordPress filter:
     * ['disposition' => 'reject_source', 'reason_code' => 'spam', 'reason' => '...'].
     *
     * @param array<string, mixed> $a
     */
    public static function fromArray(array $a): self
    {
        $d = (string) ($a['disposition'] ?? '');
        unset($a['disposition']);
        if (!\in_array($d, ['complete', 'reject_source', 'defer_item', 'fail', 'release'], true)) {
            throw new \InvalidArgumentException("unknown disposition '$d' (complete, reject_source, defer_item, fail or release)");
        }
        return new self($d, $a);
    }
}
