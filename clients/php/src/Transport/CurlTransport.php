<?php

declare(strict_types=1);

namespace Verdict\Transport;

use Verdict\Exception\TransportException;

/**
 * The default transport: ext/curl with one handle reused for every request, so the
 * connection to verdict stays open between calls (HTTP keep-alive).
 */
final class CurlTransport implements Transport
{
    private ?\CurlHandle $handle = null;

    public function __construct()
    {
        if (!\function_exists('curl_init')) {
            throw new TransportException('ext/curl is not loaded: install php-curl or pass another Transport');
        }
    }

    public function send(string $method, string $url, array $headers, ?string $body, float $timeout, float $connectTimeout): Response
    {
        $h = $this->handle ??= curl_init();
        curl_reset($h); // options only: the connection cache of the handle is kept
        $received = [];
        $lines = [];
        foreach ($headers as $name => $value) {
            $lines[] = $name . ': ' . $value;
        }
        $lines[] = 'Expect:'; // no 100-continue round trip for bodies over 1 KiB
        curl_setopt_array($h, [
            CURLOPT_URL => $url,
            CURLOPT_CUSTOMREQUEST => $method,
            CURLOPT_HTTPHEADER => $lines,
            CURLOPT_RETURNTRANSFER => true,
            CURLOPT_FOLLOWLOCATION => false,
            CURLOPT_TIMEOUT_MS => (int) ceil($timeout * 1000),
            CURLOPT_CONNECTTIMEOUT_MS => (int) ceil($connectTimeout * 1000),
            CURLOPT_NOSIGNAL => true,
            CURLOPT_TCP_KEEPALIVE => 1,
            CURLOPT_HEADERFUNCTION => static function ($ch, string $line) use (&$received): int {
                $parts = explode(':', $line, 2);
                if (\count($parts) === 2) {
                    $received[strtolower(trim($parts[0]))] = trim($parts[1]);
                }
                return \strlen($line);
            },
        ]);
        if ($body !== null) {
            curl_setopt($h, CURLOPT_POSTFIELDS, $body);
        }
        $out = curl_exec($h);
        if ($out === false) {
            $msg = curl_error($h);
            $errno = curl_errno($h);
            throw new TransportException(sprintf('%s %s: %s (curl %d)', $method, $url, $msg, $errno));
        }
        return new Response((int) curl_getinfo($h, CURLINFO_RESPONSE_CODE), $received, (string) $out);
    }
}
