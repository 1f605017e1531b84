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

    /**
     * defer_item with reason_code rate_limited: the provider said 429 and the job's key was
     * throttled (Client::backoff or a tool failure naming the key). The item waits until the
     * key reopens; no defer or failure budget is spent.
     */
    public static function rateLimited(?string $reason = null): self
    {
        return self::defer('rate_limited', $reason);
    }

    /**
     * The same decision reporting the model usage of the job (Client::usage): the claim's
     * token reservation settles against it, and stats show it per flow step and key. A release
     * carries none.
     */
    public function withUsage(int $inputTokens, int $outputTokens, ?float $costUsd = null, ?string $model = null): self
    {
        return new self($this->disposition, ['usage' => Client::usage($inputTokens, $outputTokens, $costUsd, $model)] + $this->fields);
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
