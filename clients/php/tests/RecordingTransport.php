<?php

declare(strict_types=1);

namespace Verdict\Tests;

use Verdict\Exception\TransportException;
use Verdict\Transport\CurlTransport;
use Verdict\Transport\Response;
use Verdict\Transport\Transport;

/**
 * A real transport that records every request's headers and can lose answers: the request
 * reaches verdict and takes effect, then the answer is thrown away as if the connection
 * broke — what a client retrying after a timeout sees.
 */
final class RecordingTransport implements Transport
{
    /** @var list<array{method: string, url: string, headers: array<string, string>, status: int}> */
    public array $sent = [];
    public int $loseAnswers = 0;
    private CurlTransport $inner;

    public function __construct()
    {
        $this->inner = new CurlTransport();
    }

    public function send(string $method, string $url, array $headers, ?string $body, float $timeout, float $connectTimeout): Response
    {
        $res = $this->inner->send($method, $url, $headers, $body, $timeout, $connectTimeout);
        $this->sent[] = ['method' => $method, 'url' => $url, 'headers' => $headers, 'status' => $res->status];
        if ($this->loseAnswers > 0) {
            $this->loseAnswers--;
            throw new TransportException("$method $url: answer lost (test)");
        }
        return $res;
    }
}
