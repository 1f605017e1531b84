<?php

/**
 * Tools -> verdict's item list, modelled on Action Scheduler's Scheduled Actions screen: a
 * WP_List_Table of the flow step's items with a view per state (and its count), a search by
 * identifier, paging (verdict's keyset: "next page" carries the cursor), the transitions as an
 * expandable log column, row actions (requeue, resolve, release a claim) and bulk actions,
 * each leading to a confirmation screen. Links open the item in verdict's console. An item a
 * model parked with a question shows it, with an Answer row action; the Questions view counts them.
 */

declare(strict_types=1);

use Verdict\Model\Item;
use Verdict\WordPress\WpClient;

if (!class_exists('WP_List_Table')) {
    require_once ABSPATH . 'wp-admin/includes/class-wp-list-table.php';
}

final class Verdict_Pipeline_List_Table extends WP_List_Table
{
    /** verdict's item states, in the order of the views. */
    public const STATES = ['available', 'claimed', 'processed', 'rejected', 'deferred', 'manual_review', 'failed'];
    public const PER_PAGE = 20;
    /** The user option behind Screen Options -> "Items per page". */
    public const PER_PAGE_OPTION = 'verdict_pipeline_per_page';

    /** @var array<string, int> */
    private array $counts;
    private ?int $nextAfter = null;
    private ?string $error = null;

    /**
     * @param array<string, int> $counts @param array{resolve: bool, role: string} $caps
     * @param array<int, string> $questions item id => its model's open question
     */
    public function __construct(private readonly WpClient $verdict, private readonly string $flow, array $counts, private readonly array $caps, private readonly array $questions = [])
    {
        $this->counts = $counts;
        parent::__construct(['singular' => 'item', 'plural' => 'items', 'ajax' => false, 'screen' => 'tools_page_verdict-pipeline']);
    }

    public function currentState(): string
    {
        $s = sanitize_key((string) ($_GET['item_state'] ?? ''));
        return in_array($s, self::STATES, true) ? $s : 'all';
    }

    private function search(): string
    {
        return sanitize_text_field(wp_unslash((string) ($_GET['s'] ?? '')));
    }

    private function isAdmin(): bool
    {
        return $this->caps['role'] === 'admin';
    }

    /** @return array<string, string> */
    public function get_columns(): array
    {
        return [
            'cb' => '<input type="checkbox">',
            'item' => __('Item', 'verdict-pipeline'),
            'state' => __('State', 'verdict-pipeline'),
            'budgets' => __('Attempts / failures / defers', 'verdict-pipeline'),
            'reason' => __('Last reason', 'verdict-pipeline'),
            'updated' => __('Updated', 'verdict-pipeline'),
            'log' => __('Log', 'verdict-pipeline'),
        ];
    }

    /** @return array<string, string> */
    protected function get_views(): array
    {
        $base = remove_query_arg(['item_state', 'after', 's', 'verdict_notice', 'paged']);
        $current = $this->currentState();
        $views = [];
        $total = array_sum($this->counts);
        $views['all'] = sprintf(
            '<a href="%s"%s>%s <span class="count">(%d)</span></a>',
            esc_url($base),
            $current === 'all' ? ' class="current" aria-current="page"' : '',
            esc_html__('All', 'verdict-pipeline'),
            $total
        );
        foreach (self::STATES as $state) {
            $views[$state] = sprintf(
                '<a href="%s" data-state="%s"%s>%s <span class="count">(%d)</span></a>',
                esc_url(add_query_arg('item_state', $state, $base)),
                esc_attr($state),
                $current === $state ? ' class="current" aria-current="page"' : '',
                esc_html($state),
                (int) ($this->counts[$state] ?? 0)
            );
        }
        if ($this->questions) {
            $views['questions'] = sprintf(
                '<a href="%s" data-state="questions">%s <span class="count">(%d)</span></a>',
                esc_url(add_query_arg('item_state', 'manual_review', $base)),
                esc_html__('Questions', 'verdict-pipeline'),
                count($this->questions)
            );
        }
        return $views;
    }

    /** @return array<string, string> */
    protected function get_bulk_actions(): array
    {
        if (!$this->isAdmin()) {
            return [];
        }
        $actions = ['requeue' => __('Requeue', 'verdict-pipeline'), 'release' => __('Release claim', 'verdict-pipeline')];
        if ($this->caps['resolve']) {
            $actions['resolve_processed'] = __('Resolve as processed', 'verdict-pipeline');
            $actions['resolve_rejected'] = __('Resolve as rejected', 'verdict-pipeline');
        }
        return $actions;
    }

    public function prepare_items(): void
    {
        $this->_column_headers = [$this->get_columns(), [], [], 'item'];
        $state = $this->currentState();
        $search = $this->search();
        if ($search !== '') {
            $this->items = $this->lookup($search);
            $this->set_pagination_args(['total_items' => count($this->items), 'per_page' => self::PER_PAGE]);
            return;
        }
        $after = max(0, (int) ($_GET['after'] ?? 0));
        $perPage = max(1, min(100, $this->get_items_per_page(self::PER_PAGE_OPTION, self::PER_PAGE)));
        $page = $this->verdict->listItems($this->flow, $state === 'all' ? null : $state, $perPage, $after, 'desc');
        if (is_wp_error($page)) {
            $this->error = $page->get_error_message();
            $this->items = [];
            return;
        }
        $this->items = $page->entries;
        $this->nextAfter = $page->nextAfter;
        $total = $state === 'all' ? array_sum($this->counts) : (int) ($this->counts[$state] ?? 0);
        $this->set_pagination_args(['total_items' => $total, 'per_page' => $perPage]);
    }

    /** The search: an identifier of the configured source type, or "type:identifier". @return list<Item> */
    private function lookup(string $search): array
    {
        $type = (string) Verdict_Pipeline::setting('source_type');
        $ident = $search;
        if (preg_match('/^([a-z0-9_.-]+):(.+)$/i', $search, $m) && !str_contains($m[1], '/')) {
            [$type, $ident] = [$m[1], $m[2]];
        }
        $known = $this->verdict->lookupItems($this->flow, $type, [$ident]);
        if (is_wp_error($known)) {
            $this->error = $known->get_error_message();
            return [];
        }
        $items = [];
        foreach ($known as $k) {
            $d = $this->verdict->getItem($k['id']);
            if (!is_wp_error($d)) {
                $items[] = $d->item;
            }
        }
        return $items;
    }

    public function no_items(): void
    {
        echo $this->error !== null ? esc_html($this->error) : esc_html__('No items.', 'verdict-pipeline');
    }

    /** @param Item $item */
    protected function column_cb($item): string
    {
        return sprintf('<input type="checkbox" name="item[]" value="%d" aria-label="%s">', $item->id, esc_attr(sprintf(__('Select item %d', 'verdict-pipeline'), $item->id)));
    }

    /** @param Item $item */
    protected function column_item($item): string
    {
        $console = Verdict_Pipeline_Admin::consoleUrl('#/item/' . $item->id);
        return sprintf(
            '<strong><a href="%s" target="_blank" rel="noopener">#%d</a> %s</strong><br><span class="description">%s</span>',
            esc_url($console),
            $item->id,
            esc_html($item->itemIdentifier),
            esc_html($item->sourceType)
        );
    }

    /** @param Item $item */
    protected function handle_row_actions($item, $column_name, $primary): string
    {
        if ($column_name !== $primary) {
            return '';
        }
        $actions = [];
        if ($this->isAdmin()) {
            if ($item->state === 'claimed') {
                $actions['release'] = $this->actionLink('release', $item->id, __('Release claim', 'verdict-pipeline'));
            } else {
                $actions['requeue'] = $this->actionLink('requeue', $item->id, __('Requeue', 'verdict-pipeline'));
            }
            if ($item->state === 'manual_review' && isset($this->questions[$item->id])) {
                $actions['answer'] = $this->actionLink('answer', $item->id, __('Answer', 'verdict-pipeline'));
            }
            if ($this->caps['resolve'] && in_array($item->state, ['manual_review', 'failed'], true)) {
                $actions['resolve_processed'] = $this->actionLink('resolve_processed', $item->id, __('Resolve as processed', 'verdict-pipeline'));
                $actions['resolve_rejected'] = $this->actionLink('resolve_rejected', $item->id, __('Resolve as rejected', 'verdict-pipeline'));
            }
        }
        $actions['console'] = sprintf(
            '<a href="%s" target="_blank" rel="noopener">%s</a>',
            esc_url(Verdict_Pipeline_Admin::consoleUrl('#/item/' . $item->id)),
            esc_html__('Open in verdict', 'verdict-pipeline')
        );
        return $this->row_actions($actions);
    }

    private function actionLink(string $op, int $id, string $label): string
    {
        $url = wp_nonce_url(
            add_query_arg(['page' => Verdict_Pipeline_Admin::PAGE, 'action' => $op, 'item[]' => $id], admin_url('tools.php')),
            Verdict_Pipeline_Admin::CONFIRM_NONCE
        );
        return sprintf('<a href="%s" class="verdict-%s">%s</a>', esc_url($url), esc_attr(str_replace('_', '-', $op)), esc_html($label));
    }

    /** @param Item $item */
    protected function column_default($item, $column_name): string
    {
        return match ($column_name) {
            'state' => sprintf('<span class="verdict-state verdict-state-%1$s">%1$s</span>', esc_html($item->state)),
            'budgets' => esc_html(sprintf('%d / %d / %d', $item->attempts, $item->failures, $item->defers)),
            'reason' => $this->reason($item),
            'updated' => esc_html(self::when((string) ($item->raw['updated_at'] ?? ''))),
            'log' => $this->log($item),
            default => '',
        };
    }

    /** The last reason; for a model's open question, its code and the question (the reason repeats it). */
    private function reason(Item $item): string
    {
        if ($item->state !== 'manual_review' || !isset($this->questions[$item->id])) {
            return esc_html(trim(($item->lastReasonCode ?? '') . ' ' . ($item->lastReason ?? '')));
        }
        return esc_html((string) $item->lastReasonCode) . '<p class="verdict-question"><strong>' . esc_html__('Question:', 'verdict-pipeline') . '</strong> '
            . esc_html($this->questions[$item->id]) . '</p>';
    }

    /** The item's transitions (newest first), folded: a <details> needs no script. */
    private function log(Item $item): string
    {
        $d = $this->verdict->getItem($item->id);
        if (is_wp_error($d)) {
            return esc_html($d->get_error_message());
        }
        $rows = '';
        foreach ($d->transitions as $t) {
            $rows .= sprintf(
                '<li><time>%s</time> <strong>%s</strong>: %s &rarr; %s%s%s</li>',
                esc_html(self::when((string) ($t['at'] ?? ''))),
                esc_html((string) ($t['cause'] ?? '')),
                esc_html((string) ($t['from_state'] ?? '-')),
                esc_html((string) ($t['to_state'] ?? '')),
                isset($t['reason_code']) ? ' (' . esc_html((string) $t['reason_code']) . ')' : '',
                isset($t['actor']) ? ' <span class="description">' . esc_html((string) $t['actor']) . '</span>' : ''
            );
        }
        return sprintf(
            '<details class="verdict-log"><summary>%s</summary><ol>%s</ol></details>',
            esc_html(sprintf(_n('%d transition', '%d transitions', count($d->transitions), 'verdict-pipeline'), count($d->transitions))),
            $rows
        );
    }

    /** verdict's RFC 3339 time in the site's time zone, to the second. */
    private static function when(string $iso): string
    {
        $t = strtotime($iso);
        return $t === false ? $iso : wp_date('Y-m-d H:i:s', $t);
    }

    /** verdict pages by a cursor: first page, and the next one while there is one. */
    protected function pagination($which): void
    {
        $total = (int) $this->get_pagination_arg('total_items');
        echo '<div class="tablenav-pages"><span class="displaying-num">' . esc_html(sprintf(_n('%s item', '%s items', $total, 'verdict-pipeline'), number_format_i18n($total))) . '</span>';
        $after = (int) ($_GET['after'] ?? 0);
        if ($after > 0 || $this->nextAfter !== null) {
            echo '<span class="pagination-links">';
            if ($after > 0) {
                printf(' <a class="first-page button" href="%s">%s</a>', esc_url(remove_query_arg(['after', 'verdict_notice'])), esc_html__('« First page', 'verdict-pipeline'));
            }
            if ($this->nextAfter !== null) {
                printf(
                    ' <a class="next-page button" href="%s">%s</a>',
                    esc_url(add_query_arg('after', $this->nextAfter, remove_query_arg('verdict_notice'))),
                    esc_html__('Next page ›', 'verdict-pipeline')
                );
            }
            echo '</span>';
        }
        echo '</div>';
    }
}
