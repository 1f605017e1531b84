// page-flow-steps.js - the overview (#/): per flow step its items by state, the oldest claimable
// item, stuck claims, the jobs of the last hour and its open tooling incidents; for an admin,
// pause or resume claims and requeue the failed items. Above them, the throttled limit keys.
import { api, qs } from './api.js';
import { ago, age, h, heading } from './dom.js';
import { confirmAction, itemAction, showError, showResult } from './actions.js';
import { bulkRequeue } from './page-items.js';
import { limitsSummary } from './page-limits.js';
import { REFRESH_MS, route } from './router.js';
import { isAdmin } from './session.js';
import { STATES, stateWord } from './words.js';

export async function viewFlowSteps() {
  const [stats, steps, incidents, limits] = await Promise.all([api('GET', '/v1/stats'), api('GET', '/v1/flow-steps'),
    api('GET', '/v1/tool-incidents?state=open&limit=500'), api('GET', '/v1/limits')]);
  const known = new Map(steps.flow_steps.map((f) => [f.flow_step_id, f]));
  const openIncidents = (fs) => incidents.tool_incidents.filter((t) => t.flow_step_id === fs);
  const cards = stats.flow_steps.map((f) => {
    const lastHour = Object.entries(f.jobs_last_hour).filter(([, n]) => n > 0);
    const jobsTotal = lastHour.reduce((a, [, n]) => a + n, 0);
    const counts = STATES.map((s) => h('li', {},
      h('a', { href: `#/items?${qs({ flow_step_id: f.flow_step_id, state: s, order: 'desc' })}`, class: `count st-${s}` },
        h('span', { class: 'n' }, String(f.items[s])), h('span', { class: 'label' }, stateWord(s)))));
    const actions = isAdmin() ? h('div', { class: 'actions' },
      h('button', {
        type: 'button', class: f.paused ? '' : 'secondary', 'data-action': f.paused ? 'resume' : 'pause',
        onclick: () => pauseResume(f.flow_step_id, !f.paused),
      }, f.paused ? 'Resume claims' : 'Pause claims'),
      f.items.failed > 0 ? h('button', {
        type: 'button', class: 'secondary', 'data-action': 'requeue-failed',
        onclick: () => bulkRequeue(f.flow_step_id, 'failed', null, route),
      }, `Requeue failed (${f.items.failed})…`) : null) : null;
    return h('article', { class: 'card flow', 'data-flow-step': f.flow_step_id, 'aria-labelledby': `fs-${f.flow_step_id}` },
      h('div', { class: 'flow-head' },
        h('h2', { id: `fs-${f.flow_step_id}` }, h('a', { href: `#/items?${qs({ flow_step_id: f.flow_step_id, order: 'desc' })}` }, f.flow_step_id)),
        f.paused ? h('span', { class: 'badge paused' }, 'paused') : h('span', { class: 'badge running' }, 'claiming')),
      h('ul', { class: 'counts', 'aria-label': 'Items by state' }, counts),
      h('dl', { class: 'facts' },
        h('div', {}, h('dt', {}, 'Oldest claimable'), h('dd', {}, age(f.oldest_claimable_age_seconds))),
        h('div', {}, h('dt', {}, 'Stuck claims'), h('dd', { class: f.stuck_claims ? 'warn' : '' }, String(f.stuck_claims))),
        h('div', {}, h('dt', {}, 'Jobs last hour'), h('dd', {}, String(jobsTotal),
          lastHour.length ? h('span', { class: 'muted' }, lastHour.map(([k, n]) => `${k} ${n}`).join(', ')) : ''))),
      ...openIncidents(f.flow_step_id).map((t) => incidentLine(t)),
      actions,
      known.get(f.flow_step_id) ? null : h('p', { class: 'muted' }, 'not registered as a flow step'));
  });
  return [heading('Flow steps', h('p', { class: 'muted', id: 'refresh-status' }, `as of ${new Date(Date.parse(stats.generated_at)).toLocaleTimeString()}; refreshes every ${REFRESH_MS / 1000} s`)),
    limitsSummary(limits.limits),
    cards.length ? h('div', { class: 'grid' }, cards) : h('p', {}, 'No flow steps yet: register items with POST /v1/items.')];
}

// An open tooling incident of a flow step (README "Tooling incidents") and, for an admin, its
// resolve action (which puts the incident's items back to available).
function incidentLine(t) {
  return h('p', { class: 'incident', 'data-incident': String(t.id) },
    h('a', { class: 'warn', href: `#/incident/${t.id}` }, `Tooling incident #${t.id}`),
    ` '${(t.tools && t.tools.length ? t.tools : [t.tool]).join("', '")}' fails the same way on ${t.items} item${t.items === 1 ? '' : 's'} since ${ago(t.first_seen)}: a tooling bug, not bad sources. `,
    isAdmin() ? h('button', {
      type: 'button', class: 'secondary', 'data-action': 'resolve-incident',
      onclick: () => itemAction({
        title: `Resolve tooling incident #${t.id}?`,
        text: [`'${t.tool}' in ${t.flow_step_id}: ${t.signature}`,
          'Its deferred, failed, parked and rejected items, and the items rejected while it was open, become available now.'],
        label: 'Resolve and requeue', fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: t.flow_step_id,
        call: async (v) => {
          const r = await api('POST', `/v1/tool-incidents/${t.id}/resolve`, { requeue_items: true, reason: v.reason || undefined });
          return { requeued: r.requeued.length, item_ids: r.requeued };
        },
        after: route,
      }),
    }, 'Resolve and requeue…') : null);
}

async function pauseResume(fs, pause) {
  const values = await confirmAction(`${pause ? 'Pause' : 'Resume'} ${fs}?`,
    pause ? 'Workers get no new claims from this flow step until it is resumed. Live claims are not touched.'
      : 'Workers can claim from this flow step again.', pause ? 'Pause' : 'Resume');
  if (!values) return;
  try {
    const r = await api('POST', `/v1/flow-steps/${encodeURIComponent(fs)}/${pause ? 'pause' : 'resume'}`);
    showResult(`${r.flow_step.flow_step_id} is ${r.flow_step.paused ? 'paused' : 'claiming again'}`,
      h('p', {}, `paused: ${r.flow_step.paused}, changed ${ago(r.flow_step.updated_at)}. Pausing writes no item transition.`));
  } catch (e) { showError(e); }
  await route();
}
