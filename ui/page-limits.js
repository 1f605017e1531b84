// page-limits.js - flow control, read-only (#/limits, #/limit/{key}): every limit key with its
// settings (concurrency, rate, tokens per minute) and its live use (claims in flight, the rate
// bucket, the tokens of this minute, a provider's backoff), in words; and the throttled keys
// the overview names. Limits are set with PUT /v1/limits/{key} (admin), not here.
import { api } from './api.js';
import { ago, h, heading, kv, table } from './dom.js';

const num = (n) => Number(n).toLocaleString('en');
const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
// (a key is letters, digits and . _ : @ -: it stands in a URL's fragment as it is)
const keyLink = (key) => h('a', { href: `#/limit/${key}`, class: 'ident' }, key);
const clock = (ts) => new Date(Date.parse(ts)).toLocaleTimeString();

// How long a throttle still holds, in words: "4 more minutes".
export function timeLeft(until) {
  const s = Math.max(0, Math.round((Date.parse(until) - Date.now()) / 1000));
  if (s < 90) return plural(s, 'more second');
  if (s < 5400) return `${Math.round(s / 60)} more minutes`;
  if (s < 172800) return `${Math.round(s / 3600)} more hours`;
  return `${Math.round(s / 86400)} more days`;
}

// Why a key gives no room now (a backoff, or a setting used up); [] when it is open. The
// list has a column of its own for the backoff (withThrottle false).
function closedBecause(l, withThrottle = true) {
  const why = [];
  if (l.throttled && withThrottle)
    why.push(`throttled for ${timeLeft(l.throttled_until)} (until ${clock(l.throttled_until)})${l.throttle_reason ? `: ${l.throttle_reason}` : ''}`);
  if (l.concurrency !== null && l.in_flight >= l.concurrency)
    why.push(l.concurrency === 0 ? 'closed (concurrency 0)' : `full: ${num(l.in_flight)} of ${num(l.concurrency)} in flight`);
  if (l.rate && l.rate_available === 0) why.push('no claim left in the rate bucket');
  if (l.tokens_per_minute !== null && l.tokens_reserved >= l.tokens_per_minute) why.push("this minute's tokens are spent");
  if (!why.length && !l.open && withThrottle) why.push('no room now');
  return why;
}

function stateBadge(l) {
  if (l.throttled) return h('span', { class: 'badge paused' }, 'throttled');
  return l.open ? h('span', { class: 'badge running' }, 'open') : h('span', { class: 'badge st-deferred' }, 'full');
}

const rateWords = (r) => (r ? `${num(r.count)} per ${r.per}, burst ${num(r.burst)}` : 'no rate limit');
const concurrencyUse = (l) => (l.concurrency === null ? `${num(l.in_flight)} in flight (no limit)` : `${num(l.in_flight)} of ${num(l.concurrency)} in flight`);
const rateUse = (l) => (l.rate ? `${num(l.rate_available)} of ${num(l.rate.burst)} claims available now` : '—');
const tokenUse = (l) => (l.tokens_per_minute === null
  ? (l.tokens_reserved || l.tokens_used ? `${num(l.tokens_reserved)} reserved (no limit)` : '—')
  : `${num(l.tokens_reserved)} of ${num(l.tokens_per_minute)} reserved`);

function meter(value, max, label) {
  if (max === null || max === undefined || max <= 0) return null;
  return h('meter', { min: 0, max, value: Math.min(value, max), high: max * 0.8, optimum: 0, 'aria-label': label });
}

// One sentence on a throttled key, with its link: for the overview and the list.
function throttleLine(l) {
  return h('p', { class: 'throttle', 'data-limit-key': l.key },
    h('a', { class: 'warn', href: `#/limit/${l.key}` }, `Limit key ${l.key}`),
    ` is throttled for ${timeLeft(l.throttled_until)} (until ${clock(l.throttled_until)})`,
    l.throttle_reason ? `: ${l.throttle_reason}` : '', '. Claims that need it get nothing until then; claims of other keys go on.');
}

// The overview's section: the throttled keys, and how many others are full now.
export function limitsSummary(limits) {
  const throttled = limits.filter((l) => l.throttled);
  const full = limits.filter((l) => !l.throttled && !l.open);
  if (!throttled.length && !full.length) return null;
  return h('section', { class: 'card limits-summary', 'aria-labelledby': 'h-lim-sum' },
    h('h2', { id: 'h-lim-sum' }, 'Flow control'),
    throttled.map(throttleLine),
    full.length ? h('p', {}, h('a', { href: '#/limits' }, `${plural(full.length, 'more limit key')} ${full.length === 1 ? 'is' : 'are'} full`),
      `: ${full.map((l) => l.key).join(', ')}.`) : null);
}

export async function viewLimits() {
  const { limits } = await api('GET', '/v1/limits');
  const heads = ['key', 'now', 'concurrency', 'rate', 'tokens this minute', 'throttled'];
  // (each cell names its column: on a phone a row is drawn as a card of labelled lines)
  const cell = (i, ...kids) => h('td', { 'data-label': heads[i] }, h('div', {}, ...kids));
  const rows = limits.map((l) => h('tr', { 'data-limit-key': l.key },
    cell(0, keyLink(l.key)),
    cell(1, stateBadge(l), closedBecause(l, false).length ? h('div', { class: 'muted' }, closedBecause(l, false).join('; ')) : null),
    cell(2, concurrencyUse(l), meter(l.in_flight, l.concurrency, `${l.key}: claims in flight`)),
    cell(3, rateUse(l), l.rate ? h('div', { class: 'muted' }, rateWords(l.rate)) : null),
    cell(4, tokenUse(l), meter(l.tokens_reserved, l.tokens_per_minute, `${l.key}: tokens this minute`),
      l.tokens_used ? h('div', { class: 'muted' }, `${num(l.tokens_used)} reported used`) : null),
    cell(5, l.throttled ? [h('strong', { class: 'warn' }, `for ${timeLeft(l.throttled_until)}`),
      h('div', { class: 'muted' }, `until ${clock(l.throttled_until)}`)] : 'no')));
  const throttled = limits.filter((l) => l.throttled);
  return [heading('Limits', h('p', { class: 'muted', id: 'refresh-status' }, `${plural(limits.length, 'key')}; as of ${new Date().toLocaleTimeString()}`)),
    throttled.length ? h('section', { class: 'card', 'aria-labelledby': 'h-thr' }, h('h2', { id: 'h-thr' }, 'Throttled now'),
      throttled.map(throttleLine)) : null,
    table('Limit keys', heads, rows, 'limits'),
    h('p', { class: 'muted' }, limits.length ? 'A claim hands out an item only while every key of the item and of the claim has room. '
      + 'Limits are set with PUT /v1/limits/{key} (admin); a worker that meets a provider\'s 429 reports it with POST /v1/limits/{key}/backoff.'
      : 'No limit keys yet: set one with PUT /v1/limits/{key} (admin), or a worker backs one off with POST /v1/limits/{key}/backoff.')];
}

export async function viewLimit(key) {
  const l = (await api('GET', `/v1/limits/${encodeURIComponent(key)}`)).limit;
  const why = closedBecause(l);
  return [heading(`Limit ${l.key}`, stateBadge(l)),
    h('p', {}, h('a', { href: '#/limits' }, 'All limit keys')),
    h('section', { class: 'card', 'aria-labelledby': 'h-now' }, h('h2', { id: 'h-now' }, 'Now'),
      h('p', { class: `limit-now${why.length ? ' warn' : ''}` }, why.length ? `Claims that need ${l.key} get nothing now: ${why.join('; ')}.`
        : `A claim that needs ${l.key} gets an item now.`),
      kv([['claims', [concurrencyUse(l), meter(l.in_flight, l.concurrency, 'claims in flight')]],
        ['rate bucket', rateUse(l)],
        ['tokens this minute', [tokenUse(l), meter(l.tokens_reserved, l.tokens_per_minute, 'tokens this minute')]],
        ['tokens reported used', `${num(l.tokens_used)} this minute, ${num(l.tokens_used_total)} in all`],
        ['throttled', l.throttled ? `for ${timeLeft(l.throttled_until)}, until ${clock(l.throttled_until)}` : 'no'],
        l.throttle_reason ? ['throttle reason', l.throttle_reason] : null,
        ['backoffs', `${num(l.backoffs_total)} in all${l.backoff_streak ? `, ${num(l.backoff_streak)} in a row (each pause longer, at most an hour)` : ''}`]])),
    h('section', { class: 'card', 'aria-labelledby': 'h-set' }, h('h2', { id: 'h-set' }, 'Settings'),
      kv([['concurrency', l.concurrency === null ? 'no limit' : `${num(l.concurrency)} claims at once`],
        ['rate', rateWords(l.rate)],
        ['tokens per minute', l.tokens_per_minute === null ? 'no limit' : num(l.tokens_per_minute)],
        ['changed', h('time', { datetime: l.updated_at, title: l.updated_at }, ago(l.updated_at))]]),
      h('p', { class: 'muted' }, 'Set with PUT /v1/limits/{key} (admin).'))];
}
