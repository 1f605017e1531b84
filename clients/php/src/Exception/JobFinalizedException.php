<?php

declare(strict_types=1);

namespace Verdict\Exception;

/** The job already finished with another call. */
class JobFinalizedException extends ConflictException
{
}
