<?php

declare(strict_types=1);

namespace Verdict;

use Verdict\Exception\InvalidRequestException;
use Verdict\Exception\TransportException;
use Verdict\Exception\VerdictException;
use Verdict\Model\BatchEntryResult;
use Verdict\Model\Claim;
use Verdict\Model\FlowStep;
use Verdict\Model\Item;
use Verdict\Model\ItemDetail;
use Verdict\Model\Job;
use Verdict\Model\JobResult;
use Verdict\Model\Page;
use Verdict\Model\RegisteredItem;
use Verdict\Model\Stats;
use Verdict\Model\ToolDefinitions;
use Verdict\Model\ToolFailureEnvelope;
use Verdict\Transport\CurlTransport;
use Verdict\Transport\Response;
use Verdict\Transport\Transport;

/**
 * verdict's HTTP API, one method per endpoint (openapi/verdict.yaml is the contract).
 *
 * Retries: an answer whose envelope says `retryable` (503 while the database is away, 429)
 * is sent again after its Retry-After (plus up to 50 % jitter, capped by `max_retry_delay`),
 * at most `max_retries` times and within `retry_budget` seconds in all. A request that got no
 * answer is sent again only when repeating it is harmless: reads, registrations and claims
 * (they carry an Idempotency-Key, generated here and reused on every retry), and job writes
 * (verdict replays an identical call). Tool failures and admin writes are not repeated
 * after a lost answer.
 */
final class Client
{
    public const VERSION = '0.1.0';

    private Transport $transport;
    private float $timeout;
    private float $connectTimeout;
    private int $maxRetries;
    private float $maxRetryDelay;
    private float $retryBudget;
    /** @var callable(float): void */
    private $sleep;
    private string $userAgent;
    /** @var array<string, mixed>|null */
    private ?array $openapi = null;

    /**
     * @param array{transport?: Transport, timeout?: float, connect_timeout?: float,
     *              max_retries?: int, max_retry_delay?: float, retry_budget?: float,
     *              sleep?: callable(float): void, user_agent?: string} $options
     */
    public function __construct(private readonly string $baseUrl, private readonly ?string $apiKey = null, array $options = [])
    {
        $this->transport = $options['transport'] ?? new CurlTransport();
        $this->timeout = (float) ($options['timeout'] ?? 30.0);
        $this->connectTimeout = (float) ($options['connect_timeout'] ?? 5.0);
        $this->maxRetries = (int) ($options['max_retries'] ?? 4);
        $this->maxRetryDelay = (float) ($options['max_retry_delay'] ?? 30.0);
        $this->retryBudget = (float) ($options['retry_budget'] ?? 60.0);
        $this->sleep = $options['sleep'] ?? static function (float $s): void {
            usleep((int) round($s * 1e6));
        };
        $this->userAgent = $options['user_agent'] ?? 'verdict-php/' . self::VERSION;
    }

    // --- system --------------------------------------------------------------------------

    public function healthz(): bool
    {
        return ($this->call('GET', '/healthz', retries: 0)['status'] ?? null) === 'ok';
    }

    /** @return array<string, mixed> GET /readyz (UnavailableException when not ready; no retries) */
    public function readyz(): array
    {
        return $this->call('GET', '/readyz', retries: 0);
    }

    /** The Prometheus text of GET /metrics (reader). */
    public function metrics(): string
    {
        return $this->call('GET', '/metrics', raw: true);
    }

    /** @return array{actor: string, role: string} GET /v1/whoami (verdict with issue 19) */
    public function whoami(): array
    {
        return $this->call('GET', '/v1/whoami');
    }

    /** Whether the server documents `METHOD /path/{template}` in its /openapi.json (cached). */
    public function supports(string $method, string $path): bool
    {
        $this->openapi ??= $this->call('GET', '/openapi.json');
        return isset($this->openapi['paths'][$path][strtolower($method)]);
    }

    // --- items ---------------------------------------------------------------------------

    /**
     * POST /v1/items: register 1-1000 items (existing ones are left untouched).
     *
     * @param list<array<string, mixed>> $items each {flow_step_id, source_type, item_identifier, payload?, priority? (-1000..1000, aged: a point is a minute of waiting), delay_seconds?, max_attempts?, max_defers?, limit_keys?}
     * @return list<RegisteredItem> in input order
     */
    public function registerItems(array $items, ?string $idempotencyKey = null): array
    {
        $out = $this->call('POST', '/v1/items', ['items' => array_values($items)], idempotencyKey: $idempotencyKey ?? self::uuid());
        return array_map(static fn (array $i): RegisteredItem => RegisteredItem::fromArray($i), $out['items']);
    }

    /** @param array<string, mixed>|null $payload @param array<string, mixed> $options priority, delay_seconds, max_attempts, max_defers, limit_keys */
    public function registerItem(string $flowStepId, string $sourceType, string $itemIdentifier, ?array $payload = null, array $options = []): RegisteredItem
    {
        $item = ['flow_step_id' => $flowStepId, 'source_type' => $sourceType, 'item_identifier' => $itemIdentifier] + $options;
        if ($payload !== null) {
            $item['payload'] = $payload;
        }
        return $this->registerItems([$item])[0];
    }

    /**
     * GET /v1/items, a page at a time: pass the Page's nextAfter as $after for the next one.
     * $order `asc` (oldest first, the default) or `desc` (newest first).
     *
     * @return Page<Item>
     */
    public function listItems(?string $flowStepId = null, ?string $state = null, int $limit = 100, int $after = 0, ?string $order = null): Page
    {
        $out = $this->call('GET', '/v1/items', query: ['flow_step_id' => $flowStepId, 'state' => $state, 'limit' => $limit, 'after' => $after ?: null,
            'order' => $order]);
        return new Page(
            array_map(static fn (array $i): Item => Item::fromArray($i), $out['items']),
            isset($out['next_after']) ? (int) $out['next_after'] : null
        );
    }

    public function getItem(int $itemId): ItemDetail
    {
        $out = $this->call('GET', "/v1/items/$itemId");
        return new ItemDetail(Item::fromArray($out['item']), $out['transitions']);
    }

    /**
     * POST /v1/items/lookup.
     *
     * @param list<string> $identifiers
     * @return array<string, array{id: int, state: string}> the known ones, by identifier
     */
    public function lookupItems(string $flowStepId, string $sourceType, array $identifiers): array
    {
        $out = $this->call('POST', '/v1/items/lookup', ['flow_step_id' => $flowStepId, 'source_type' => $sourceType,
            'item_identifiers' => array_values($identifiers)], retryTransport: true);
        $known = [];
        foreach ($out['items'] as $i) {
            $known[(string) $i['item_identifier']] = ['id' => (int) $i['id'], 'state' => (string) $i['state']];
        }
        return $known;
    }

    // --- claims and job writes -----------------------------------------------------------

    /**
     * POST /v1/claims: up to $limit items, possibly none. $waitSeconds (1..20): a long-poll —
     * when nothing is claimable the server holds the call until items come (or the wait
     * passes: then none), so an idle worker need not poll; the call's timeout grows by it.
     *
     * @return list<Claim>
     */
    public function claim(string $flowStepId, string $workerId, int $limit = 1, ?int $leaseSeconds = null, ?string $idempotencyKey = null, ?string $workerVersion = null, ?int $waitSeconds = null, ?array $limitKeys = null, ?int $estimatedTokens = null): array
    {
        $body = ['flow_step_id' => $flowStepId, 'worker_id' => $workerId, 'limit' => $limit];
        if ($limitKeys !== null) {
            $body['limit_keys'] = array_values($limitKeys); // e.g. ['provider:openai', 'model:gpt-4o']
        }
        if ($estimatedTokens !== null) {
            $body['estimated_tokens'] = $estimatedTokens; // reserved per item on tokens_per_minute keys
        }
        if ($waitSeconds !== null) {
            $body['wait_seconds'] = $waitSeconds;
        }
        if ($leaseSeconds !== null) {
            $body['lease_seconds'] = $leaseSeconds;
        }
        if ($workerVersion !== null) {
            $body['worker_version'] = $workerVersion; // a semantic version, e.g. 1.4.2
        }
        $out = $this->call(
            'POST',
            '/v1/claims',
            $body,
            idempotencyKey: $idempotencyKey ?? self::uuid(),
            timeout: $this->timeout + max(0, $waitSeconds ?? 0)
        );
        return array_map(static fn (array $c): Claim => Claim::fromArray($c), $out['claims']);
    }

    /**
     * POST /v1/jobs/{id}/heartbeat; returns the new lease_expires_at. $checkpoint (at most
     * 64 KiB as JSON) is merged into the job's and handed to the item's next claim as
     * Claim::$previousCheckpoint.
     *
     * @param array<string, mixed>|null $checkpoint
     */
    public function heartbeat(Claim|int $job, ?string $token = null, ?int $leaseSeconds = null, ?array $checkpoint = null): string
    {
        [$id, $body] = $this->jobBody($job, $token);
        if ($leaseSeconds !== null) {
            $body['lease_seconds'] = $leaseSeconds;
        }
        if ($checkpoint !== null) {
            $body['checkpoint'] = (object) $checkpoint;
        }
        return (string) $this->call('POST', "/v1/jobs/$id/heartbeat", $body, retryTransport: true)['lease_expires_at'];
    }

    /**
     * POST /v1/jobs/{id}/disposition: complete, reject_source, defer_item, fail. With
     * $claimNext (1..100) the same call claims the next items of the job's flow step for the
     * same worker, in the same transaction: JobResult::claims() (an identical repeat answers
     * the same claims).
     *
     * @param array<string, mixed> $fields reason_code, reason, manual_review, retry_after_seconds, error, retryable, force, engine_data, usage;
     *        claim_next, lease_seconds, limit_keys (the worker's keys for those claims), estimated_tokens
     */
    public function disposition(Claim|int $job, string $disposition, array $fields = [], ?string $token = null, int $claimNext = 0, ?int $leaseSeconds = null): JobResult
    {
        [$id, $body] = $this->jobBody($job, $token);
        $body = $body + ['disposition' => $disposition] + $fields;
        if ($claimNext > 0) { // the next items of the job's flow step, in the same transaction
            $body['claim_next'] = $claimNext;
            if ($leaseSeconds !== null) {
                $body['lease_seconds'] = $leaseSeconds;
            }
        }
        return JobResult::fromArray($this->call('POST', "/v1/jobs/$id/disposition", $body, retryTransport: true));
    }

    /**
     * The `usage` member a disposition may carry: the model tokens (and cost) the job spent.
     * verdict settles the claim's token reservation against it, sums it on the item (a flow
     * step's max_item_tokens / max_item_cost_usd) and shows it in stats per flow step and key.
     *
     * @return array{input_tokens: int, output_tokens: int, cost_usd?: float, model?: string}
     */
    public static function usage(int $inputTokens, int $outputTokens, ?float $costUsd = null, ?string $model = null): array
    {
        return ['input_tokens' => $inputTokens, 'output_tokens' => $outputTokens]
            + array_filter(['cost_usd' => $costUsd, 'model' => $model], static fn ($v) => $v !== null);
    }

    /**
     * @param array<string, mixed> $engineData
     * @param array<string, mixed>|null $usage Client::usage(...)
     */
    public function complete(Claim $claim, array $engineData = [], ?array $usage = null): JobResult
    {
        return $this->disposition($claim, 'complete', ($engineData ? ['engine_data' => $engineData] : []) + self::withUsage($usage));
    }

    /** @param array<string, mixed>|null $usage Client::usage(...) */
    public function rejectSource(Claim $claim, string $reasonCode, ?string $reason = null, ?array $usage = null): JobResult
    {
        return $this->disposition($claim, 'reject_source', array_filter(['reason_code' => $reasonCode, 'reason' => $reason], static fn ($v) => $v !== null) + self::withUsage($usage));
    }

    /**
     * defer_item. With $reasonCode 'rate_limited' (after backoff() or a tool failure naming a
     * limit key) the item waits until its keys reopen and no defer or failure budget is spent.
     *
     * @param array<string, mixed>|null $usage Client::usage(...)
     */
    public function deferItem(Claim $claim, string $reasonCode, ?string $reason = null, bool $manualReview = false, ?int $retryAfterSeconds = null, ?array $usage = null): JobResult
    {
        $f = ['reason_code' => $reasonCode, 'manual_review' => $manualReview];
        $f += array_filter(['reason' => $reason, 'retry_after_seconds' => $retryAfterSeconds], static fn ($v) => $v !== null);
        return $this->disposition($claim, 'defer_item', $f + self::withUsage($usage));
    }

    /** @param array<string, mixed>|null $usage Client::usage(...) */
    public function fail(Claim $claim, string $error, bool $retryable = true, ?array $usage = null): JobResult
    {
        return $this->disposition($claim, 'fail', ['error' => $error, 'retryable' => $retryable] + self::withUsage($usage));
    }

    /**
     * @param array<string, mixed>|null $usage
     * @return array<string, mixed>
     */
    private static function withUsage(?array $usage): array
    {
        return $usage !== null ? ['usage' => $usage] : [];
    }

    /**
     * POST /v1/dispositions: up to 100 dispositions of different jobs in one transaction.
     *
     * @param list<array<string, mixed>> $entries each {job_id, claim_token, disposition, ...fields}
     * @return list<BatchEntryResult> in request order; a refused entry carries its error
     */
    public function dispositions(array $entries): array
    {
        $out = $this->call('POST', '/v1/dispositions', ['dispositions' => array_values($entries)], retryTransport: true);
        $results = [];
        foreach ($out['results'] as $r) {
            $status = (int) $r['status'];
            $results[] = $status === 200
                ? new BatchEntryResult((int) $r['job_id'], $status, JobResult::fromArray($r), null)
                : new BatchEntryResult((int) $r['job_id'], $status, null, VerdictException::fromEnvelope($status, $r, null));
        }
        return $results;
    }

    /** POST /v1/jobs/{id}/tool-failures: record it; answers the envelope to hand the model. */
    public function toolFailure(Claim|int $job, string $tool, mixed $args, string $error, string $kind = 'unknown', bool $required = false, ?string $token = null, ?string $limitKey = null, ?int $retryAfterSeconds = null): ToolFailureEnvelope
    {
        [$id, $body] = $this->jobBody($job, $token);
        $body += ['tool' => $tool, 'args' => $args, 'error' => $error, 'kind' => $kind, 'required' => $required];
        if ($limitKey !== null) { // the provider said 429: the key is throttled
            $body['limit_key'] = $limitKey;
            if ($retryAfterSeconds !== null) {
                $body['retry_after_seconds'] = $retryAfterSeconds;
            }
        }
        return ToolFailureEnvelope::fromArray($this->call('POST', "/v1/jobs/$id/tool-failures", $body));
    }

    /** @param array<string, mixed> $session POST /v1/jobs/{id}/session-outcome */
    public function sessionOutcome(Claim|int $job, array $session, bool $apply = true, ?string $token = null): JobResult
    {
        [$id, $body] = $this->jobBody($job, $token);
        $body += ['session' => $session, 'apply' => $apply];
        return JobResult::fromArray($this->call('POST', "/v1/jobs/$id/session-outcome", $body, retryTransport: true));
    }

    /**
     * @param array<string, mixed> $session
     * @return array<string, mixed> POST /v1/adjudications: the adjudication; nothing is stored
     */
    public function adjudicate(array $session): array
    {
        return $this->call('POST', '/v1/adjudications', ['session' => $session], retryTransport: true)['adjudication'];
    }

    /** POST /v1/jobs/{id}/release: give the claim back without a verdict (no budget spent). */
    public function release(Claim|int $job, ?string $reason = null, ?string $token = null): JobResult
    {
        [$id, $body] = $this->jobBody($job, $token);
        if ($reason !== null) {
            $body['reason'] = $reason;
        }
        return JobResult::fromArray($this->call('POST', "/v1/jobs/$id/release", $body, retryTransport: true));
    }

    // --- reads ---------------------------------------------------------------------------

    /** @return Page<Job> */
    public function listJobs(?string $flowStepId = null, ?string $status = null, ?string $since = null, int $limit = 100, int $after = 0): Page
    {
        $out = $this->call('GET', '/v1/jobs', query: ['flow_step_id' => $flowStepId, 'status' => $status, 'since' => $since,
            'limit' => $limit, 'after' => $after ?: null]);
        return new Page(
            array_map(static fn (array $j): Job => Job::fromArray($j), $out['jobs']),
            isset($out['next_after']) ? (int) $out['next_after'] : null
        );
    }

    public function getJob(int $jobId): Job
    {
        return Job::fromArray($this->call('GET', "/v1/jobs/$jobId")['job']);
    }

    public function stats(?string $flowStepId = null): Stats
    {
        return Stats::fromArray($this->call('GET', '/v1/stats', query: ['flow_step_id' => $flowStepId]));
    }

    /** GET /v1/tool-definitions; $format openai, anthropic or mcp. */
    public function toolDefinitions(string $format = 'openai'): ToolDefinitions
    {
        return ToolDefinitions::fromArray($this->call('GET', '/v1/tool-definitions', query: ['format' => $format]));
    }

    /** @return list<FlowStep> */
    public function flowSteps(): array
    {
        return array_map(static fn (array $f): FlowStep => FlowStep::fromArray($f), $this->call('GET', '/v1/flow-steps')['flow_steps']);
    }

    // --- flow control ----------------------------------------------------------------------

    /**
     * GET /v1/limits: every limit key with its settings and live use.
     *
     * @return list<array<string, mixed>>
     */
    public function limits(): array
    {
        return $this->call('GET', '/v1/limits')['limits'];
    }

    /** @return array<string, mixed> GET /v1/limits/{key} */
    public function getLimit(string $key): array
    {
        return $this->call('GET', '/v1/limits/' . rawurlencode($key))['limit'];
    }

    /**
     * PUT /v1/limits/{key} (admin): sets every setting; a null one is no limit of that kind.
     *
     * @param array{per: string, count: int, burst?: int}|null $rate
     * @return array<string, mixed>
     */
    public function putLimit(string $key, ?int $concurrency = null, ?array $rate = null, ?int $tokensPerMinute = null): array
    {
        $body = ['concurrency' => $concurrency, 'rate' => $rate, 'tokens_per_minute' => $tokensPerMinute];
        return $this->call('PUT', '/v1/limits/' . rawurlencode($key), $body, retryTransport: true)['limit'];
    }

    /** DELETE /v1/limits/{key} (admin); answers the key removed. */
    public function deleteLimit(string $key): string
    {
        return $this->call('DELETE', '/v1/limits/' . rawurlencode($key))['deleted'];
    }

    /**
     * POST /v1/limits/{key}/backoff (worker): a provider answered 429 or overload. Claims
     * needing the key get nothing until it reopens; then defer the job with
     * deferItem($claim, 'rate_limited'), which spends no budget.
     *
     * @return array<string, mixed>
     */
    public function backoff(string $key, int $retryAfterSeconds = 60, ?string $reason = null): array
    {
        $body = ['retry_after_seconds' => $retryAfterSeconds];
        if ($reason !== null) {
            $body['reason'] = $reason;
        }
        return $this->call('POST', '/v1/limits/' . rawurlencode($key) . '/backoff', $body)['limit'];
    }

    // --- admin ---------------------------------------------------------------------------

    public function pauseFlowStep(string $flowStepId): FlowStep
    {
        return FlowStep::fromArray($this->call('POST', '/v1/flow-steps/' . rawurlencode($flowStepId) . '/pause', retryTransport: true)['flow_step']);
    }

    public function resumeFlowStep(string $flowStepId): FlowStep
    {
        return FlowStep::fromArray($this->call('POST', '/v1/flow-steps/' . rawurlencode($flowStepId) . '/resume', retryTransport: true)['flow_step']);
    }

    /**
     * PATCH /v1/flow-steps/{id}: the settings given (incident_min_items, incident_window_minutes,
     * pause_on_incident, strict_evidence, tools, max_item_tokens, max_item_cost_usd, fair_key).
     *
     * @param array<string, mixed> $settings
     */
    public function configureFlowStep(string $flowStepId, array $settings): FlowStep
    {
        return FlowStep::fromArray($this->call('PATCH', '/v1/flow-steps/' . rawurlencode($flowStepId), $settings, retryTransport: true)['flow_step']);
    }

    /** Claims of the flow step rotate between the items' values of this limit key name ('site'); null removes it. */
    public function setFairKey(string $flowStepId, ?string $fairKey): FlowStep
    {
        return $this->configureFlowStep($flowStepId, ['fair_key' => $fairKey ?? '']);
    }

    /** POST /v1/items/{id}/requeue: any state but claimed -> available. */
    public function requeue(int $itemId, ?string $reason = null, bool $resetBudgets = false): Item
    {
        $body = ['reset_budgets' => $resetBudgets] + ($reason !== null ? ['reason' => $reason] : []);
        return Item::fromArray($this->call('POST', "/v1/items/$itemId/requeue", $body)['item']);
    }

    /**
     * Reprocess an item you know by its identifier: POST /v1/items/lookup, then POST
     * /v1/items/{id}/requeue (admin). Answers the requeued item, or null when verdict knows no
     * such item. A claimed item is a ConflictException (invalid_transition): try again after
     * its disposition.
     */
    public function requeueByIdentifier(string $flowStepId, string $sourceType, string $itemIdentifier, ?string $reason = null, bool $resetBudgets = false): ?Item
    {
        $known = $this->lookupItems($flowStepId, $sourceType, [$itemIdentifier]);
        if (!isset($known[$itemIdentifier])) {
            return null;
        }
        return $this->requeue($known[$itemIdentifier]['id'], $reason, $resetBudgets);
    }

    /** POST /v1/items/requeue: returns how many items were requeued. */
    public function requeueBulk(string $flowStepId, string $state, ?string $reasonCode = null, ?int $limit = null, ?string $reason = null, bool $resetBudgets = false): int
    {
        $body = array_filter(['flow_step_id' => $flowStepId, 'state' => $state, 'reason_code' => $reasonCode, 'limit' => $limit,
            'reason' => $reason], static fn ($v) => $v !== null) + ['reset_budgets' => $resetBudgets];
        return (int) $this->call('POST', '/v1/items/requeue', $body)['requeued'];
    }

    /**
     * POST /v1/items/requeue with the redrive filters: returns the ids requeued (or, with
     * $dryRun, the ids the same call would requeue now, changing nothing).
     *
     * @param array<string, mixed> $selection state or states, and any of reason_code,
     *        tool_failed, failed_under_version ("<1.4.2"), since, until (RFC 3339), limit
     * @return list<int>
     */
    public function redrive(string $flowStepId, array $selection, ?string $reason = null, bool $resetBudgets = false, bool $dryRun = false): array
    {
        $body = ['flow_step_id' => $flowStepId] + $selection + ['reset_budgets' => $resetBudgets, 'dry_run' => $dryRun];
        if ($reason !== null && !$dryRun) {
            $body['reason'] = $reason;
        }
        return array_map('intval', $this->call('POST', '/v1/items/requeue', $body)['item_ids']);
    }

    /** POST /v1/items/{id}/release: end the live claim of a claimed item now (admin). */
    public function releaseItem(int $itemId, ?string $reason = null): JobResult
    {
        return JobResult::fromArray($this->call('POST', "/v1/items/$itemId/release", $reason !== null ? ['reason' => $reason] : []));
    }

    /**
     * POST /v1/items/{id}/resolve (verdict with issue 19): decide a parked item
     * (manual_review or failed) as processed or rejected. NotFoundException on a server
     * without the endpoint: check supports('POST', '/v1/items/{item_id}/resolve').
     */
    public function resolve(int $itemId, string $outcome, string $reason, ?string $reasonCode = null): Item
    {
        $body = ['outcome' => $outcome, 'reason' => $reason] + ($reasonCode !== null ? ['reason_code' => $reasonCode] : []);
        return Item::fromArray($this->call('POST', "/v1/items/$itemId/resolve", $body)['item']);
    }

    /**
     * GET /v1/reviews: items waiting for a person (manual_review), oldest question first, each
     * with the question of its model's request_review (null when it was parked another way),
     * and per flow step how many wait and how many ask a question.
     *
     * @return array{flow_steps: list<array<string, mixed>>, reviews: list<array<string, mixed>>}
     */
    public function reviews(?string $flowStepId = null, ?int $limit = null): array
    {
        return $this->call('GET', '/v1/reviews', query: ['flow_step_id' => $flowStepId, 'limit' => $limit]);
    }

    /**
     * POST /v1/items/{id}/review (admin): answer a model's question. $decision retry (the
     * item is available now and its next claim carries review: {question, answer, by, at};
     * $answer required), processed or rejected. A ConflictException (invalid_transition) when
     * the item is not in manual_review.
     */
    public function answerReview(int $itemId, string $decision, ?string $answer = null): Item
    {
        $body = ['decision' => $decision] + ($answer !== null && $answer !== '' ? ['answer' => $answer] : []);
        return Item::fromArray($this->call('POST', "/v1/items/$itemId/review", $body)['item']);
    }

    // --- plumbing ------------------------------------------------------------------------

    /** A random (version 4) UUID, e.g. for an Idempotency-Key. */
    public static function uuid(): string
    {
        $b = random_bytes(16);
        $b[6] = \chr((\ord($b[6]) & 0x0f) | 0x40);
        $b[8] = \chr((\ord($b[8]) & 0x3f) | 0x80);
        return vsprintf('%s%s-%s-%s-%s-%s%s%s', str_split(bin2hex($b), 4));
    }

    /** @return array{0: int, 1: array<string, mixed>} */
    private function jobBody(Claim|int $job, ?string $token): array
    {
        if ($job instanceof Claim) {
            return [$job->jobId, ['claim_token' => $token ?? $job->claimToken]];
        }
        if ($token === null) {
            throw new InvalidRequestException('a job id needs its claim token', 'missing_field', false, null, 'claim_token');
        }
        return [$job, ['claim_token' => $token]];
    }

    /**
     * One logical call, with its retries. Answers the decoded JSON (or the text with $raw).
     *
     * @param array<string, mixed>|null $body
     * @param array<string, scalar|null> $query
     */
    private function call(
        string $method,
        string $path,
        ?array $body = null,
        array $query = [],
        ?string $idempotencyKey = null,
        bool $retryTransport = false,
        bool $raw = false,
        ?int $retries = null,
        ?float $timeout = null
    ): mixed {
        $query = array_filter($query, static fn ($v) => $v !== null);
        $url = rtrim($this->baseUrl, '/') . $path . ($query ? '?' . http_build_query($query, '', '&', PHP_QUERY_RFC3986) : '');
        $headers = ['Accept' => 'application/json', 'User-Agent' => $this->userAgent, 'X-Request-Id' => 'php-' . bin2hex(random_bytes(8))];
        if ($this->apiKey !== null && $this->apiKey !== '') {
            $headers['Authorization'] = 'Bearer ' . $this->apiKey;
        }
        $payload = null;
        if ($body !== null || $method === 'POST') {
            $payload = json_encode($body ?? new \stdClass(), JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR);
            $payload = $payload === '[]' ? '{}' : $payload;
            $headers['Content-Type'] = 'application/json';
        }
        $retryTransport = $retryTransport || $method === 'GET';
        if ($idempotencyKey !== null) {
            $headers['Idempotency-Key'] = $idempotencyKey; // the same on every retry
            $retryTransport = true;
        }
        $max = $retries ?? $this->maxRetries;
        $started = microtime(true);
        for ($attempt = 1;; $attempt++) {
            try {
                $res = $this->transport->send($method, $url, $headers, $payload, $timeout ?? $this->timeout, $this->connectTimeout);
            } catch (TransportException $e) {
                if ($retryTransport && $this->mayRetry($attempt, $max, $started, null)) {
                    continue;
                }
                throw $e;
            }
            if ($res->status >= 200 && $res->status < 300) {
                return $raw ? $res->body : self::decode($res, $method, $path);
            }
            $env = json_decode($res->body, true);
            $e = VerdictException::fromEnvelope($res->status, \is_array($env) ? $env : [], $res->header('x-request-id'));
            if ($e->retryable && $this->mayRetry($attempt, $max, $started, $res->header('retry-after'))) {
                continue;
            }
            throw $e;
        }
    }

    /** Whether to try again; if so, waits first (Retry-After, else backoff; plus jitter). */
    private function mayRetry(int $attempt, int $max, float $started, ?string $retryAfter): bool
    {
        if ($attempt > $max) {
            return false;
        }
        $base = min(8.0, 0.25 * (2 ** ($attempt - 1)));
        if ($retryAfter !== null && $retryAfter !== '') {
            $base = is_numeric($retryAfter) ? (float) $retryAfter : max(0.0, (float) (strtotime($retryAfter) ?: time()) - time());
        }
        $wait = min($this->maxRetryDelay, $base * (1.0 + mt_rand() / mt_getrandmax() * 0.5));
        if (microtime(true) - $started + $wait > $this->retryBudget) {
            return false;
        }
        ($this->sleep)($wait);
        return true;
    }

    private static function decode(Response $res, string $method, string $path): mixed
    {
        try {
            return json_decode($res->body, true, 512, JSON_THROW_ON_ERROR);
        } catch (\JsonException $e) {
            throw new VerdictException(
                "$method $path: the answer is not JSON: " . $e->getMessage(),
                'invalid_answer',
                false,
                null,
                null,
                $res->status,
                $res->header('x-request-id')
            );
        }
    }
}
