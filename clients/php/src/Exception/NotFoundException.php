<?php

declare(strict_types=1);

namespace Verdict\Exception;

/** 404: no such item, job or route. */
class NotFoundException extends VerdictException
{
}
