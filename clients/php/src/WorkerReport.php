<?php

declare(strict_types=1);

namespace Verdict;

/** What one Worker::run did. */
final class WorkerReport
{
    /**
     * @param array<string, int> $dispositions count by disposition ("release" included)
     * @param list<string> $errors claims lost, callbacks that threw, calls that failed
     */
    public function __construct(
        public readonly int $claimed,
        public readonly array $dispositions,
        public readonly int $releasedForTime,
        public readonly array $errors,
        public readonly bool $stoppedForTime,
    ) {
    }
}
