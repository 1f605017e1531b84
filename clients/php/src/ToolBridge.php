<?php

declare(strict_types=1);

namespace Verdict;

use Verdict\Model\Claim;
use Verdict\Model\JobResult;
use Verdict\Model\ToolDefinitions;
use Verdict\Model\ToolFailureEnvelope;

/**
 * Between a model's tool calls and verdict. tools() is the served disposition tools in the
 * provider's format (OpenAI chat/function tools or Anthropic tools), ready to pass to the
 * provider; apply() turns the model's call of one of them (an OpenAI tool_call or an
 * Anthropic tool_use block) into the disposition; failure() records a tool that threw and
 * returns the tool-result message that hands verdict's envelope back to the model.
 */
final class ToolBridge
{
    private ?ToolDefinitions $defs = null;

    public function __construct(private readonly Client $client, private readonly string $format = 'openai')
    {
        if (!\in_array($format, ['openai', 'anthropic'], true)) {
            throw new \InvalidArgumentException("format must be openai or anthropic, not '$format'");
        }
    }

    /** @return list<array<string, mixed>> the disposition tools in the provider's format */
    public function tools(): array
    {
        return $this->definitions()->tools;
    }

    public function isDispositionTool(string $name): bool
    {
        return isset($this->definitions()->dispositions[$name]);
    }

    /**
     * The name and arguments of a provider's tool call.
     *
     * @param array<string, mixed> $call OpenAI {id, type: function, function: {name, arguments: "<json>"}}
     *                                   or Anthropic {type: tool_use, id, name, input: {...}}
     * @return array{0: string, 1: array<string, mixed>, 2: string} name, arguments, call id
     */
    public static function parseCall(array $call): array
    {
        if (isset($call['function'])) {
            $args = $call['function']['arguments'] ?? '{}';
            $args = \is_string($args) ? json_decode($args === '' ? '{}' : $args, true, 64, JSON_THROW_ON_ERROR) : $args;
            return [(string) $call['function']['name'], \is_array($args) ? $args : [], (string) ($call['id'] ?? '')];
        }
        return [(string) $call['name'], \is_array($call['input'] ?? null) ? $call['input'] : [], (string) ($call['id'] ?? '')];
    }

    /**
     * Apply a model's call of a disposition tool: POST /v1/jobs/{id}/disposition with
     * {claim_token, disposition: dispositions[tool], ...arguments}.
     *
     * @param array<string, mixed> $call
     */
    public function apply(Claim $claim, array $call): JobResult
    {
        [$name, $args] = self::parseCall($call);
        if (!$this->isDispositionTool($name)) {
            throw new \InvalidArgumentException("'$name' is not one of verdict's disposition tools");
        }
        unset($args['claim_token'], $args['disposition']);
        return $this->client->disposition($claim, $this->definitions()->dispositions[$name], $args);
    }

    /**
     * A tool of the pipeline threw: record it in verdict and answer the provider's
     * tool-result message carrying verdict's envelope (retryable, repeat_count, hint) for
     * the model.
     *
     * @param array<string, mixed> $call the model's tool call that failed
     * @return array{message: array<string, mixed>, envelope: ToolFailureEnvelope}
     */
    public function failure(Claim $claim, array $call, \Throwable $error, string $kind = 'unknown', bool $required = false): array
    {
        [$name, $args, $id] = self::parseCall($call);
        $env = $this->client->toolFailure($claim, $name, $args ?: null, $error->getMessage() ?: $error::class, $kind, $required);
        return ['message' => $this->resultMessage($id, $env->toArray(), true), 'envelope' => $env];
    }

    /**
     * A tool-result message in the provider's format.
     *
     * @param array<string, mixed> $content sent as JSON text
     * @return array<string, mixed>
     */
    public function resultMessage(string $callId, array $content, bool $isError = false): array
    {
        $text = json_encode($content, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE | JSON_THROW_ON_ERROR);
        if ($this->format === 'openai') {
            return ['role' => 'tool', 'tool_call_id' => $callId, 'content' => $text];
        }
        return ['type' => 'tool_result', 'tool_use_id' => $callId, 'content' => $text, 'is_error' => $isError];
    }

    private function definitions(): ToolDefinitions
    {
        return $this->defs ??= $this->client->toolDefinitions($this->format);
    }
}
