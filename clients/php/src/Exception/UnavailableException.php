<?php

declare(strict_types=1);

namespace Verdict\Exception;

/** 5xx or 429: verdict or its database could not answer; retryable ones were retried first. */
class UnavailableException extends VerdictException
{
}
