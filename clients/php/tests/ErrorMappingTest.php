<?php

declare(strict_types=1);

namespace Verdict\Tests;

use Verdict\Client;
use Verdict\Exception\AuthException;
use Verdict\Exception\ClaimLostException;
use Verdict\Exception\ConflictException;
use Verdict\Exception\InvalidRequestException;
use Verdict\Exception\JobFinalizedException;
use Verdict\Exception\NotFoundException;
use Verdict\Exception\TransportException;
use Verdict\Exception\VerdictException;

/** Each error of the envelope table becomes its exception, carrying the envelope. */
final class ErrorMappingTest extends TestCase
{
    private function caught(callable $call): VerdictException
    {
        try {
            $call();
        } catch (VerdictException $e) {
            return $e;
        }
        self::fail('no exception');
    }

    public function testEnvelopeFieldsAndClasses(): void
    {
        $w = $this->client('worker');
        $flow = $this->flow('errors');
        $this->seed($w, $flow, 1);

        $e = $this->caught(fn () => $w->claim($flow, ''));
        self::assertInstanceOf(InvalidRequestException::class, $e);
        self::assertSame(['invalid_field', 'worker_id', 400, false], [$e->errorCode, $e->field, $e->httpStatus, $e->retryable]);
        self::assertNotEmpty($e->hint);
        self::assertMatchesRegularExpression('/^php-[0-9a-f]{16}$/', (string) $e->requestId);
        self::assertSame('invalid_field', $e->envelope['error']);
        self::assertStringContainsString('worker_id', $e->getMessage());

        $e = $this->caught(fn () => $this->client('reader')->claim($flow, 'w'));
        self::assertInstanceOf(AuthException::class, $e);
        self::assertSame([403, 'forbidden'], [$e->httpStatus, $e->errorCode]);
        $e = $this->caught(fn () => (new Client(self::env('VERDICT_PHP_BASE_URL'), 'no-such-key'))->stats());
        self::assertInstanceOf(AuthException::class, $e);
        self::assertSame(401, $e->httpStatus);

        $e = $this->caught(fn () => $w->getItem(987654321));
        self::assertInstanceOf(NotFoundException::class, $e);
        self::assertSame('not_found', $e->errorCode);

        [$cl] = $w->claim($flow, 'w');
        $e = $this->caught(fn () => $w->heartbeat($cl->jobId, '00000000-0000-4000-8000-000000000000'));
        self::assertInstanceOf(ClaimLostException::class, $e);
        $w->complete($cl);
        $e = $this->caught(fn () => $w->fail($cl, 'x'));
        self::assertInstanceOf(JobFinalizedException::class, $e);
        self::assertSame('disposition', $e->field);
        $e = $this->caught(fn () => $this->client('admin')->releaseItem($cl->item->id));
        self::assertInstanceOf(ConflictException::class, $e);
        self::assertSame('invalid_transition', $e->errorCode);

        $e = $this->caught(fn () => $w->heartbeat(1));
        self::assertSame('claim_token', $e->field);
    }

    public function testNoAnswerIsATransportError(): void
    {
        $waits = [];
        $c = new Client('http://127.0.0.1:1', 'k', ['max_retries' => 2, 'sleep' => function (float $s) use (&$waits): void {
            $waits[] = $s;
        }]);
        $e = $this->caught(fn () => $c->stats());
        self::assertInstanceOf(TransportException::class, $e);
        self::assertSame(0, $e->httpStatus);
        self::assertCount(2, $waits, 'a read is sent again after no answer, max_retries times');
        $waits = [];
        $this->caught(fn () => $c->toolFailure(1, 't', null, 'e', token: '00000000-0000-4000-8000-000000000000'));
        self::assertCount(0, $waits, 'a tool failure is not repeated after a lost answer');
    }
}
