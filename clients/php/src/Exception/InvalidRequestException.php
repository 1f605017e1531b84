<?php

declare(strict_types=1);

namespace Verdict\Exception;

/** 400, 413, 415 or 422: the request is wrong; $field names the field. */
class InvalidRequestException extends VerdictException
{
}
