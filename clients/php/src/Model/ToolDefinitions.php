<?php

declare(strict_types=1);

namespace Verdict\Model;

/**
 * GET /v1/tool-definitions: the disposition tools in a provider's format (`tools` can be
 * passed to the provider as is) and the `disposition` each tool name stands for.
 */
final class ToolDefinitions
{
    /**
     * @param list<array<string, mixed>> $tools
     * @param array<string, string> $dispositions tool name => disposition
     */
    public function __construct(public readonly string $format, public readonly array $tools, public readonly array $dispositions)
    {
    }

    /** @param array<string, mixed> $a */
    public static function fromArray(array $a): self
    {
        return new self((string) $a['format'], $a['tools'], $a['dispositions']);
    }
}
