<?php

declare(strict_types=1);

namespace Verdict\Exception;

/** No answer at all: connection refused, timeout, TLS. */
class TransportException extends VerdictException
{
}
