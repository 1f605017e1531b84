<?php

declare(strict_types=1);

namespace Verdict\Tests;

use Verdict\Client;

/**
 * Against the real verdictd and PostgreSQL that tests/run.sh started: its URL and keys come
 * from the environment. Each test uses its own flow step, so tests do not see each other's
 * items.
 */
abstract class TestCase extends \PHPUnit\Framework\TestCase
{
    protected static function env(string $name): string
    {
        $v = getenv($name);
        if ($v === false || $v === '') {
            self::markTestSkipped("$name is not set: run clients/php/tests/run.sh");
        }
        return $v;
    }

    /** @param array<string, mixed> $options */
    protected function client(string $role = 'admin', array $options = []): Client
    {
        $key = self::env('VERDICT_PHP_' . strtoupper($role) . '_KEY');
        return new Client(self::env('VERDICT_PHP_BASE_URL'), $key, $options + ['timeout' => 10.0]);
    }

    protected function flow(string $what): string
    {
        return 'php-' . $what . '-' . bin2hex(random_bytes(4));
    }

    /** @return list<int> ids of items registered in $flow as a, b, c, ... */
    protected function seed(Client $c, string $flow, int $n, array $extra = []): array
    {
        $items = [];
        for ($i = 0; $i < $n; $i++) {
            $items[] = ['flow_step_id' => $flow, 'source_type' => 'rss', 'item_identifier' => \chr(97 + $i)] + $extra;
        }
        return array_map(static fn ($r) => $r->id, $c->registerItems($items));
    }
}
