// page-incidents.js - tooling incidents (#/incidents, #/incident/{id}).
import { api, qs } from './api.js';
import { ago, fmt, h, heading, kv, stateBadge, table } from './dom.js';
import { itemAction } from './actions.js';
import { route } from './router.js';
import { isAdmin } from './session.js';

// A tooling incident: what failed (the sample error as it was, and its pattern), through which
// tools, the items it affected and their states now, its timeline and the resolve action.
export async function viewIncident(id) {
  const t = (await api('GET', `/v1/tool-incidents/${id}`)).tool_incident;
  const tools = t.tools && t.tools.length ? t.tools : [t.tool];
  const events = [[t.first_seen, 'first failure of this kind'], [t.opened_at, `opened: ${t.items} items failed the same way`],
    [t.last_seen, 'latest failure'], t.resolved_at ? [t.resolved_at, `resolved by ${fmt(t.resolved_by)}${t.resolve_reason ? `: ${t.resolve_reason}` : ''}`] : null]
    .filter((e) => e && e[0]).sort((a, b) => Date.parse(b[0]) - Date.parse(a[0]));
  const resolve = isAdmin() && t.state === 'open' ? h('div', { class: 'actions' }, h('button', {
    type: 'button', 'data-action': 'resolve-incident', onclick: () => itemAction({
      title: `Resolve tooling incident #${t.id}?`,
      text: ['Its deferred, failed, parked and rejected items, and the items rejected while it was open, become available now.'],
      label: 'Resolve and requeue', fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: t.flow_step_id,
      call: async (v) => {
        const r = await api('POST', `/v1/tool-incidents/${t.id}/resolve`, { requeue_items: true, reason: v.reason || undefined });
        return { requeued: r.requeued.length, item_ids: r.requeued };
      },
      after: route,
    }) }, 'Resolve and requeue…')) : null;
  return [heading(`Tooling incident #${t.id}`, h('span', { class: `badge ${t.state === 'open' ? 'paused' : 'running'}` }, t.state)),
    resolve,
    h('section', { class: 'card', 'aria-labelledby': 'h-what' }, h('h2', { id: 'h-what' }, 'What fails'),
      h('pre', { class: 'sample-error' }, t.sample_error),
      kv([['flow step', h('a', { href: `#/items?${qs({ flow_step_id: t.flow_step_id, order: 'desc' })}` }, t.flow_step_id)],
        ['tools', tools.join(', ')],
        t.template ? ['template', h('code', {}, t.template)] : null,
        ['pattern', h('code', {}, t.signature)],
        ['items', String(t.items)]])),
    h('section', { class: 'card', 'aria-labelledby': 'h-aff' }, h('h2', { id: 'h-aff' }, 'Affected items'),
      table('Affected items', ['item', 'identifier', 'state now'], (t.affected_items || []).map((a) => h('tr', { 'data-item': String(a.id) },
        h('td', {}, h('a', { href: `#/item/${a.id}` }, `item ${a.id}`)), h('td', { class: 'ident' }, a.item_identifier), h('td', {}, stateBadge(a.state)))))),
    h('section', { class: 'card', 'aria-labelledby': 'h-itl' }, h('h2', { id: 'h-itl' }, 'Timeline'),
      h('ol', { class: 'timeline', reversed: true }, events.map(([at, what]) => h('li', {},
        h('div', { class: 'tl-head' }, h('strong', {}, what)), h('div', { class: 'muted' }, h('time', { datetime: at, title: at }, ago(at)))))))];
}

export async function viewIncidents() {
  const [open, resolved] = await Promise.all([api('GET', '/v1/tool-incidents?state=open&limit=500'),
    api('GET', '/v1/tool-incidents?state=resolved&limit=500')]);
  const rows = (list) => list.slice().reverse().map((t) => h('tr', { 'data-incident': String(t.id) },
    h('td', {}, h('a', { href: `#/incident/${t.id}` }, `#${t.id}`)), h('td', {}, t.flow_step_id),
    h('td', {}, (t.tools && t.tools.length ? t.tools : [t.tool]).join(', ')), h('td', { class: 'ident' }, t.sample_error),
    h('td', {}, String(t.items)), h('td', {}, ago(t.resolved_at || t.last_seen))));
  const heads = ['incident', 'flow step', 'tools', 'sample error', 'items', 'last change'];
  return [heading('Tooling incidents'),
    h('section', { class: 'card', 'aria-labelledby': 'h-open' }, h('h2', { id: 'h-open' }, 'Open'), table('Open incidents', heads, rows(open.tool_incidents))),
    h('section', { class: 'card', 'aria-labelledby': 'h-res' }, h('h2', { id: 'h-res' }, 'Resolved'), table('Resolved incidents', heads, rows(resolved.tool_incidents)))];
}
