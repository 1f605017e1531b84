<?php

declare(strict_types=1);

namespace Verdict\Tests;

use Verdict\Exception\AuthException;
use Verdict\Exception\ConflictException;

/** requeueByIdentifier (what the WordPress plugin's reprocess calls) and listItems' order. */
final class ReprocessTest extends TestCase
{
    public function testRequeueByIdentifierReprocessesAProcessedItem(): void
    {
        $c = $this->client('admin');
        $flow = $this->flow('reprocess');
        $c->registerItem($flow, 'wp_post', 'post-7', ['title' => 'first draft']);
        [$cl] = $c->claim($flow, 'php-test@a');
        $c->complete($cl);
        self::assertSame('processed', $c->getItem($cl->item->id)->item->state);

        $item = $c->requeueByIdentifier($flow, 'wp_post', 'post-7', 'the post was edited');
        self::assertNotNull($item);
        self::assertSame($cl->item->id, $item->id);
        self::assertSame('available', $item->state);
        $requeues = array_values(array_filter($c->getItem($item->id)->transitions, static fn ($t) => $t['cause'] === 'requeue'));
        self::assertCount(1, $requeues);
        self::assertSame('the post was edited', $requeues[0]['reason']);
        // claimable again, as a second attempt of the same item
        [$again] = $c->claim($flow, 'php-test@a');
        self::assertSame($item->id, $again->item->id);

        // a claimed item cannot be requeued: 409, to be tried again after its disposition
        try {
            $c->requeueByIdentifier($flow, 'wp_post', 'post-7');
            self::fail('a claimed item was requeued');
        } catch (ConflictException $e) {
            self::assertSame(409, $e->httpStatus);
        }
        $c->complete($again);
    }

    public function testRequeueByIdentifierOfAnUnknownItemIsNull(): void
    {
        $c = $this->client('admin');
        $flow = $this->flow('reprocess-none');
        $c->registerItem($flow, 'wp_post', 'post-1');
        self::assertNull($c->requeueByIdentifier($flow, 'wp_post', 'post-2'));
        self::assertNull($c->requeueByIdentifier($flow, 'rss', 'post-1')); // another source type
    }

    public function testRequeueByIdentifierNeedsAnAdminKey(): void
    {
        $flow = $this->flow('reprocess-role');
        $this->client('admin')->registerItem($flow, 'wp_post', 'post-1');
        $this->expectException(AuthException::class);
        $this->client('worker')->requeueByIdentifier($flow, 'wp_post', 'post-1');
    }

    public function testListItemsNewestFirst(): void
    {
        $c = $this->client('reader');
        $flow = $this->flow('order');
        $ids = $this->seed($this->client('worker'), $flow, 3);
        $asc = $c->listItems($flow, null, 10);
        self::assertSame($ids, array_map(static fn ($i) => $i->id, $asc->entries));
        $desc = $c->listItems($flow, null, 2, 0, 'desc');
        self::assertSame([$ids[2], $ids[1]], array_map(static fn ($i) => $i->id, $desc->entries));
        self::assertNotNull($desc->nextAfter);
        $rest = $c->listItems($flow, null, 2, $desc->nextAfter, 'desc');
        self::assertSame([$ids[0]], array_map(static fn ($i) => $i->id, $rest->entries));
    }
}
