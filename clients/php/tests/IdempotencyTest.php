<?php

declare(strict_types=1);

namespace Verdict\Tests;

/** Registrations and claims carry an Idempotency-Key, reused when the client retries. */
final class IdempotencyTest extends TestCase
{
    public function testLostAnswersAreRetriedWithTheSameKey(): void
    {
        $t = new RecordingTransport();
        $c = $this->client('worker', ['transport' => $t, 'sleep' => static function (float $s): void {
        }]);
        $flow = $this->flow('idem');

        $t->loseAnswers = 1;
        $reg = $c->registerItem($flow, 'rss', 'x');
        self::assertCount(2, $t->sent);
        $k1 = $t->sent[0]['headers']['Idempotency-Key'] ?? null;
        self::assertMatchesRegularExpression('/^[0-9a-f-]{36}$/', (string) $k1);
        self::assertSame($k1, $t->sent[1]['headers']['Idempotency-Key']);
        self::assertTrue($reg->created, 'the retry replays the first answer (created: true)');
        self::assertCount(1, $c->listItems($flow)->entries);

        $t->sent = [];
        $t->loseAnswers = 2;
        $claims = $c->claim($flow, 'php-test@i');
        self::assertCount(3, $t->sent);
        $keys = array_unique(array_map(static fn ($s) => $s['headers']['Idempotency-Key'], $t->sent));
        self::assertCount(1, $keys, 'one key for the three attempts');
        self::assertCount(1, $claims, 'the replay answers the claim made by the first attempt');
        self::assertSame(1, $c->getItem($reg->id)->item->attempts, 'claimed once, not three times');
        self::assertSame([], $c->claim($flow, 'php-test@i'));

        // a new logical call gets a new key; a disposition whose answer was lost replays
        $t->sent = [];
        $t->loseAnswers = 1;
        $r = $c->complete($claims[0]);
        self::assertTrue($r->replayed);
        self::assertSame('processed', $r->item->state);
        self::assertArrayNotHasKey('Idempotency-Key', $t->sent[0]['headers']);
    }
}
