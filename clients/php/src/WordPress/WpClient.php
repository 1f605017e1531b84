<?php

declare(strict_types=1);

namespace Verdict\WordPress;

use Verdict\Client;
use Verdict\Exception\VerdictException;
use Verdict\Transport\WpHttpTransport;

/**
 * The client as WordPress code expects it: requests go through the WP HTTP API and a failed
 * call returns a WP_Error instead of throwing. Every Client method is available under the
 * same name; the WP_Error's code is `verdict_<error>` (e.g. verdict_claim_lost), its data
 * holds status, retryable, hint, field, request_id and the envelope.
 *
 *     $verdict = WpClient::create(get_option('verdict_base_url'), VERDICT_API_KEY);
 *     $claims = $verdict->claim('wp-posts', 'site-1');
 *     if (is_wp_error($claims)) { error_log($claims->get_error_message()); }
 *
 * @mixin Client
 */
final class WpClient
{
    public function __construct(private readonly Client $client)
    {
    }

    /** @param array<string, mixed> $options Client options; the transport is the WP HTTP API */
    public static function create(string $baseUrl, ?string $apiKey, array $options = []): self
    {
        return new self(new Client($baseUrl, $apiKey, ['transport' => new WpHttpTransport()] + $options));
    }

    public function client(): Client
    {
        return $this->client;
    }

    /** @param list<mixed> $args */
    public function __call(string $name, array $args): mixed
    {
        try {
            return $this->client->$name(...$args);
        } catch (VerdictException $e) {
            return self::toWpError($e);
        }
    }

    public static function toWpError(VerdictException $e): \WP_Error
    {
        return new \WP_Error('verdict_' . $e->errorCode, $e->getMessage(), [
            'status' => $e->httpStatus,
            'retryable' => $e->retryable,
            'hint' => $e->hint,
            'field' => $e->field,
            'request_id' => $e->requestId,
            'envelope' => $e->envelope,
        ]);
    }
}
