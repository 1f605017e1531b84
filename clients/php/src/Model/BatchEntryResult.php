<?php

declare(strict_types=1);

namespace Verdict\Model;

use Verdict\Exception\VerdictException;

/** One entry of POST /v1/dispositions: its result, or the error that refused it. */
final class BatchEntryResult
{
    public function __construct(
        public readonly int $jobId,
        public readonly int $status,
        public readonly ?JobResult $result,
        public readonly ?VerdictException $error,
    ) {
    }
}
