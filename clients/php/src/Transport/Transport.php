<?php

declare(strict_types=1);

namespace Verdict\Transport;

use Verdict\Exception\TransportException;

/**
 * Sends one HTTP request and returns its answer, whatever its status. A request that got no
 * answer (connection refused, timeout, TLS) throws TransportException.
 */
interface Transport
{
    /**
     * @param array<string, string> $headers
     * @throws TransportException
     */
    public function send(string $method, string $url, array $headers, ?string $body, float $timeout, float $connectTimeout): Response;
}
