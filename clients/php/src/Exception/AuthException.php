<?php

declare(strict_types=1);

namespace Verdict\Exception;

/** 401 or 403: the key is missing, unknown, or its role may not make the call. */
class AuthException extends VerdictException
{
}
