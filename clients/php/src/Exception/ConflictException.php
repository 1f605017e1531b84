<?php

declare(strict_types=1);

namespace Verdict\Exception;

/** 409: the state does not allow the call (claim_lost, job_finalized, invalid_transition, tool_failure_pending, ...). */
class ConflictException extends VerdictException
{
}
