<?php

declare(strict_types=1);

namespace Verdict\Transport;

use Verdict\Exception\TransportException;

/**
 * Inside WordPress: the WP HTTP API (wp_remote_request), so proxies, the http_request_args
 * filters and the site's own transport settings apply. It uses wp_remote_request and not
 * wp_safe_remote_request on purpose: the "safe" variant refuses loopback and private
 * addresses, which is exactly where a self-hosted verdict usually runs (unless the
 * http_request_host_is_external filter allows the host).
 */
final class WpHttpTransport implements Transport
{
    public function __construct()
    {
        if (!\function_exists('wp_remote_request')) {
            throw new TransportException('WpHttpTransport needs WordPress (wp_remote_request)');
        }
    }

    public function send(string $method, string $url, array $headers, ?string $body, float $timeout, float $connectTimeout): Response
    {
        $args = [
            'method' => $method,
            'headers' => $headers,
            'timeout' => $timeout,
            'redirection' => 0,
            'httpversion' => '1.1',
            'blocking' => true,
        ];
        if ($body !== null) {
            $args['body'] = $body;
        }
        $res = wp_remote_request($url, $args);
        if (is_wp_error($res)) {
            throw new TransportException(sprintf('%s %s: %s', $method, $url, $res->get_error_message()));
        }
        $headers = [];
        foreach (wp_remote_retrieve_headers($res) as $name => $value) {
            $headers[strtolower((string) $name)] = \is_array($value) ? (string) end($value) : (string) $value;
        }
        return new Response((int) wp_remote_retrieve_response_code($res), $headers, (string) wp_remote_retrieve_body($res));
    }
}
