<?php

declare(strict_types=1);

namespace Verdict\Exception;

/** The claim token no longer holds the item (lease passed, released, or claimed again): discard the work. */
class ClaimLostException extends ConflictException
{
}
