<?php

declare(strict_types=1);

namespace Verdict\Exception;

/**
 * Every failure of a call. An answer from verdict carries its error envelope: the code
 * (`error`, e.g. claim_lost), whether the same call may succeed later (`retryable`), the
 * `hint`, the `field` a 400 names, the HTTP status and the request id to quote in a report.
 * A call that got no answer at all is a TransportException (status 0).
 */
class VerdictException extends \RuntimeException
{
    /** @param array<string, mixed> $envelope the decoded error body (empty when there was none) */
    public function __construct(
        string $message,
        public readonly string $errorCode = 'transport_error',
        public readonly bool $retryable = false,
        public readonly ?string $hint = null,
        public readonly ?string $field = null,
        public readonly int $httpStatus = 0,
        public readonly ?string $requestId = null,
        public readonly array $envelope = [],
        ?\Throwable $previous = null,
    ) {
        parent::__construct($message, $httpStatus, $previous);
    }

    /**
     * The exception class for an envelope: the specific ones callers catch, else by status.
     *
     * @param array<string, mixed> $env
     */
    public static function fromEnvelope(int $status, array $env, ?string $requestId): self
    {
        $code = \is_string($env['error'] ?? null) ? $env['error'] : 'http_' . $status;
        $message = \is_string($env['message'] ?? null) ? $env['message'] : "verdict answered HTTP $status";
        $class = match (true) {
            $code === 'claim_lost' => ClaimLostException::class,
            $code === 'job_finalized' => JobFinalizedException::class,
            $code === 'not_found' || $status === 404 => NotFoundException::class,
            $status === 401 || $status === 403 => AuthException::class,
            $status === 400 || $status === 413 || $status === 415 || $status === 422 => InvalidRequestException::class,
            $status === 409 => ConflictException::class,
            $status >= 500 || $status === 429 => UnavailableException::class,
            default => self::class,
        };
        return new $class(
            sprintf('%s (%s, HTTP %d%s)', $message, $code, $status, $requestId ? ", request $requestId" : ''),
            $code,
            (bool) ($env['retryable'] ?? ($status === 503 || $status === 429)),
            \is_string($env['hint'] ?? null) ? $env['hint'] : null,
            \is_string($env['field'] ?? null) ? $env['field'] : null,
            $status,
            $requestId,
            $env,
        );
    }
}
