// page-search.js - search (#/search?q=): by item identifier (exact, then prefix), item id
// or trace id.
import { api, qs } from './api.js';
import { ago, h, heading, stateBadge, table } from './dom.js';

// Up to 50 items of a filtered list, newest first. A list reads a window of items per call
// (docs/api-guide.md, "Lists"): a short page is not the end while next_after is set, so follow
// it, for at most 40 calls.
async function itemsMatching(filter) {
  const items = [];
  let after = 0;
  for (let call = 0; call < 40 && items.length < 50; call++) {
    const r = await api('GET', `/v1/items?${qs({ ...filter, limit: 50 - items.length, order: 'desc', after })}`);
    items.push(...r.items);
    if (r.next_after === null || r.next_after === undefined) break;
    after = r.next_after;
  }
  return { items };
}

// Search by item identifier (exact matches first, then those starting with the text), by item
// id, and by W3C trace id (the jobs claimed or finished in that trace).
export async function viewSearch(params) {
  const q = (params.get('q') || '').trim();
  const form = searchForm('search-q', q);
  if (!q) return [heading('Search'), form, h('p', { class: 'muted' }, 'Type an item identifier (or its beginning), an item id or a trace id.')];
  const isTrace = /^[0-9a-f]{32}$/.test(q);
  const [exact, prefix, traced, byId] = await Promise.all([
    itemsMatching({ identifier: q }),
    itemsMatching({ identifier_prefix: q }),
    isTrace ? api('GET', `/v1/jobs?${qs({ trace_id: q, limit: 50 })}`) : null,
    /^\d{1,15}$/.test(q) ? api('GET', `/v1/items/${q}`).catch(() => null) : null]);
  const seen = new Set(exact.items.map((i) => i.id));
  const items = [...exact.items, ...prefix.items.filter((i) => !seen.has(i.id))];
  const rows = items.map((it) => h('tr', { 'data-item': String(it.id) },
    h('td', {}, h('a', { href: `#/item/${it.id}` }, `item ${it.id}`)),
    h('td', { class: 'ident' }, it.item_identifier, seen.has(it.id) ? h('span', { class: 'muted' }, ' (exact)') : ''),
    h('td', {}, it.flow_step_id), h('td', {}, stateBadge(it.state)),
    h('td', {}, h('time', { datetime: it.updated_at, title: it.updated_at }, ago(it.updated_at)))));
  return [heading(`Search: ${q}`), form,
    byId ? h('p', {}, 'Item id ', h('a', { href: `#/item/${byId.item.id}` }, `item ${byId.item.id}`), ` (${byId.item.item_identifier})`) : null,
    traced ? h('section', { class: 'card', 'aria-labelledby': 'h-traced' }, h('h2', { id: 'h-traced' }, 'Jobs in this trace'),
      table('Jobs in this trace', ['job', 'item', 'status', 'trace of'], traced.jobs.map((j) => h('tr', {},
        h('td', {}, h('a', { href: `#/job/${j.id}` }, `job ${j.id}`)), h('td', {}, h('a', { href: `#/item/${j.item_id}` }, `item ${j.item_id}`)),
        h('td', {}, j.status), h('td', {}, [j.claim_trace_id === q ? 'its claim' : null, j.disposition_trace_id === q ? 'its disposition' : null].filter(Boolean).join(' and ')))))) : null,
    table('Matching items', ['item', 'identifier', 'flow step', 'state', 'updated'], rows, 'search-results'),
    items.length >= 50 ? h('p', { class: 'muted' }, 'The first 50 of each kind; type more of the identifier to narrow it.') : null];
}

function searchForm(id, value) {
  return h('form', { class: 'filters', role: 'search', 'aria-label': 'Search items', onsubmit: (e) => {
    e.preventDefault();
    location.hash = `#/search?${qs({ q: e.target.elements.q.value.trim() })}`;
  } }, h('div', { class: 'field' }, h('label', { for: id }, 'Item identifier, item id or trace id'),
    h('input', { id, name: 'q', value: value || '', autocomplete: 'off', type: 'search', maxlength: 2000 })),
  h('button', { type: 'submit' }, 'Search'));
}
