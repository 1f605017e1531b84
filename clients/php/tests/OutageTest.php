<?php

declare(strict_types=1);

namespace Verdict\Tests;

use Verdict\Exception\UnavailableException;

/**
 * The test's own PostgreSQL is stopped under a running verdictd (tests/run.sh owns that
 * cluster): verdict answers 503 database_unavailable with Retry-After, the client waits
 * that long (plus jitter) and tries again, and succeeds once the database is back.
 */
final class OutageTest extends TestCase
{
    private static function pg(string $what): void
    {
        $cmd = self::env('VERDICT_PHP_PG_' . strtoupper($what));
        exec($cmd . ' 2>&1', $out, $rc);
        self::assertSame(0, $rc, "$what: " . implode("\n", $out));
    }

    public function testRetryAfterDuringADatabaseOutage(): void
    {
        $waits = [];
        $sleep = function (float $s) use (&$waits): void {
            $waits[] = $s;
            usleep((int) ($s * 1e6));
        };
        $t = new RecordingTransport();
        $c = $this->client('worker', ['transport' => $t, 'sleep' => $sleep, 'max_retries' => 2]);
        $flow = $this->flow('outage');
        $c->registerItem($flow, 'rss', 'before');
        $t->sent = [];
        self::pg('stop');
        try {
            // bounded: three attempts, then the 503 surfaces with its envelope
            try {
                $c->registerItem($flow, 'rss', 'during');
                self::fail('registered without a database');
            } catch (UnavailableException $e) {
                self::assertSame([503, 'database_unavailable', true], [$e->httpStatus, $e->errorCode, $e->retryable]);
            }
            self::assertCount(2, $waits);
            foreach ($waits as $w) {
                self::assertGreaterThanOrEqual(1.0, $w, 'Retry-After: 1 is honoured');
                self::assertLessThanOrEqual(1.5, $w, 'jitter adds at most half');
            }
            self::assertSame([503, 503, 503], array_column($t->sent, 'status'));
            $keys = array_unique(array_map(static fn ($s) => $s['headers']['Idempotency-Key'], $t->sent));
            self::assertCount(1, $keys);

            // the database comes back while the client is waiting: the call succeeds
            $waits = [];
            $t->sent = [];
            $c2 = $this->client('worker', ['transport' => $t, 'sleep' => $sleep, 'max_retries' => 30]);
            $start = self::env('VERDICT_PHP_PG_START');
            exec('(sleep 2; ' . $start . ') >/dev/null 2>&1 &');
            $reg = $c2->registerItem($flow, 'rss', 'during');
            self::assertTrue($reg->created);
            self::assertGreaterThanOrEqual(1, \count($waits));
            self::assertSame(503, $t->sent[0]['status']);
            self::assertSame(200, $t->sent[\count($t->sent) - 1]['status']);
        } finally {
            exec(self::env('VERDICT_PHP_PG_START') . ' >/dev/null 2>&1'); // no-op when it runs
        }
        self::assertCount(2, $c->listItems($flow)->entries);
    }
}
