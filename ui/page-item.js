// page-item.js - one item (#/item/{id}): its facts, why it waits, its tooling incidents, its
// timeline, jobs, tool failures and adjudications; for an admin, requeue, resolve, release.
import { api, qs } from './api.js';
import { ago, fmt, h, heading, kv, stateBadge, table } from './dom.js';
import { itemAction } from './actions.js';
import { explainAdjudication } from './page-job.js';
import { answerButton } from './page-review.js';
import { route } from './router.js';
import { isAdmin } from './session.js';
import { causeWord, dispositionWord, PARKED, reasonWord } from './words.js';

// Why a transition parked an item (manual review or failed), in words; null for any other.
// The budgets are the item's now: right for its latest parking, the usual question.
function parkWhy(t, it) {
  if (t.to_state === 'manual_review') {
    if (t.cause === 'request_review' || t.reason_code === 'review_requested') return 'the model asked an editor a question';
    if (t.cause === 'defer_item' && it.defers >= it.max_defers) return `defer budget spent: ${it.defers} of ${it.max_defers}`;
    if (t.cause === 'defer_item') return 'the worker asked for a person to look';
    return 'parked for a person to decide';
  }
  if (t.to_state === 'failed') {
    if (t.reason_code === 'retry_budget_exhausted' || it.failures >= it.max_attempts)
      return `failure budget spent: ${it.failures} of ${it.max_attempts}`;
    if (t.cause === 'fail') return 'a failure retrying cannot fix (the worker said it is not retryable)';
    if (t.cause === 'session_outcome') return 'the session failed in a way a retry cannot fix';
  }
  return null;
}

// The tooling incidents (open or resolved) that list item `it` among their affected items.
async function incidentsOfItem(it) {
  const list = (await api('GET', `/v1/tool-incidents?${qs({ flow_step_id: it.flow_step_id, limit: 500 })}`)).tool_incidents.slice(-20);
  const full = await Promise.all(list.map((t) => api('GET', `/v1/tool-incidents/${t.id}`).then((x) => x.tool_incident)));
  return full.filter((t) => (t.affected_items || []).some((a) => a.id === it.id));
}

export async function viewItem(id) {
  const [r, jobs] = await Promise.all([api('GET', `/v1/items/${id}`), api('GET', `/v1/jobs?${qs({ item_id: id, order: 'desc', limit: 100 })}`)]);
  const it = r.item;
  const incidents = await incidentsOfItem(it);
  const asked = it.state === 'manual_review' && r.transitions[0] && r.transitions[0].cause === 'request_review' ? r.transitions[0] : null;
  const reload = () => route();
  const actions = [];
  if (isAdmin()) {
    if (it.state !== 'claimed')
      actions.push(h('button', { type: 'button', 'data-action': 'requeue', onclick: () => itemAction({
        title: `Requeue item ${it.id}?`, text: `It goes from ${it.state} to available now.`, label: 'Requeue',
        fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: it.flow_step_id, itemIds: [it.id],
        call: (v) => api('POST', `/v1/items/${it.id}/requeue`, v.reason ? { reason: v.reason } : {}), after: reload,
      }) }, 'Requeue…'));
    if (PARKED.includes(it.state))
      actions.push(h('button', { type: 'button', 'data-action': 'resolve', onclick: () => itemAction({
        title: `Resolve item ${it.id}?`, text: `It is ${it.state}: decide it by hand.`, label: 'Resolve',
        fields: [{ name: 'outcome', label: 'Outcome', type: 'select', options: ['rejected', 'processed'] },
          { name: 'reason', label: 'Reason', type: 'text', required: true },
          { name: 'reason_code', label: 'Reason code', type: 'text', max: 200 }],
        flowStepId: it.flow_step_id, itemIds: [it.id],
        call: (v) => api('POST', `/v1/items/${it.id}/resolve`, { outcome: v.outcome, reason: v.reason, reason_code: v.reason_code || undefined }),
        after: reload,
      }) }, 'Resolve…'));
    if (it.state === 'claimed')
      actions.push(h('button', { type: 'button', 'data-action': 'release', onclick: () => itemAction({
        title: `Release the claim on item ${it.id}?`,
        text: `Job ${it.current_job_id} loses its claim at once (its next write is 409 claim_lost); the item is available again and no budget is spent.`,
        label: 'Release', fields: [{ name: 'reason', label: 'Reason', type: 'text' }], flowStepId: it.flow_step_id, itemIds: [it.id],
        call: (v) => api('POST', `/v1/items/${it.id}/release`, v.reason ? { reason: v.reason } : {}), after: reload,
      }) }, 'Release claim…'));
  }
  const adjudicated = jobs.jobs.filter((j) => j.adjudication);
  const failures = jobs.jobs.filter((j) => j.tool_failures && j.tool_failures.count > 0);
  return [heading(`Item ${it.id}`, stateBadge(it.state)),
    actions.length ? h('div', { class: 'actions', 'aria-label': 'Actions' }, actions) : null,
    h('section', { class: 'card', 'aria-labelledby': 'h-item' }, h('h2', { id: 'h-item' }, 'Item'),
      kv([['flow step', h('a', { href: `#/items?${qs({ flow_step_id: it.flow_step_id, order: 'desc' })}` }, it.flow_step_id)],
        ['source', `${it.source_type}: ${it.item_identifier}`],
        ['attempts', String(it.attempts)], ['failures', `${it.failures} of ${it.max_attempts}`], ['defers', `${it.defers} of ${it.max_defers}`],
        ['priority', String(it.priority)], ['available', ago(it.available_at)],
        it.lease_expires_at ? ['lease until', ago(it.lease_expires_at)] : null,
        it.current_job_id ? ['latest job', h('a', { href: `#/job/${it.current_job_id}` }, `job ${it.current_job_id}`)] : null,
        ['last reason', `${reasonWord(it.last_reason_code)}${it.last_reason ? `: ${it.last_reason}` : ''}`],
        ['registered', ago(it.created_at)]]),
      it.payload ? h('details', {}, h('summary', {}, 'Payload'), h('pre', {}, JSON.stringify(it.payload, null, 2))) : null),
    it.state === 'manual_review' ? h('section', { class: 'card review-card', 'aria-labelledby': 'h-q' },
      h('h2', { id: 'h-q' }, asked ? 'The model asks an editor' : 'Waiting for a person'),
      asked ? h('blockquote', { class: 'question' }, asked.reason) : h('p', {}, parkWhy(r.transitions[0] || {}, it) || 'parked for a person to decide'),
      asked ? h('p', { class: 'muted' }, `asked by ${fmt(asked.actor)} ${ago(asked.at)}`) : null,
      isAdmin() ? answerButton(it.id, it.flow_step_id, asked ? asked.reason : null, reload) : null) : null,
    incidents.length ? h('section', { class: 'card', 'aria-labelledby': 'h-inc' }, h('h2', { id: 'h-inc' }, 'Tooling incidents'),
      h('ul', {}, incidents.map((t) => h('li', { 'data-incident': String(t.id) },
        h('a', { href: `#/incident/${t.id}` }, `Tooling incident #${t.id}`), ` (${t.state}): '${t.tool}' — ${t.sample_error}`)))) : null,
    h('section', { class: 'card', 'aria-labelledby': 'h-tl' }, h('h2', { id: 'h-tl' }, 'Timeline'),
      h('ol', { class: 'timeline', reversed: true }, r.transitions.map((t, i) => h('li', { 'data-transition': t.id },
        h('div', { class: 'tl-head' }, t.from_state ? stateBadge(t.from_state) : '', t.from_state ? ' → ' : '', stateBadge(t.to_state),
          ' ', h('strong', {}, causeWord(t.cause)), t.job_id ? [' ', h('a', { href: `#/job/${t.job_id}` }, `job ${t.job_id}`)] : ''),
        i === 0 && parkWhy(t, it) ? h('div', { class: 'why' }, `Why: ${parkWhy(t, it)}`) : null,
        h('div', { class: 'muted' }, `by ${fmt(t.actor)} · `, h('time', { datetime: t.at, title: t.at }, ago(t.at)),
          t.reason_code ? ` · reason: ${reasonWord(t.reason_code)}` : '', t.forced ? ' · forced past the required-tool check' : ''),
        t.reason ? h('div', { class: 'reason' }, t.reason) : null)))),
    h('section', { class: 'card', 'aria-labelledby': 'h-jobs' }, h('h2', { id: 'h-jobs' }, 'Jobs'),
      table('Jobs of this item', ['job', 'attempt', 'worker', 'status', 'disposition', 'reason', 'tool failures', 'claimed'],
        jobs.jobs.map((j) => h('tr', {}, h('td', {}, h('a', { href: `#/job/${j.id}` }, `job ${j.id}`)), h('td', {}, String(j.attempt)),
          h('td', {}, j.worker_id), h('td', {}, j.status), h('td', {}, dispositionWord(j.disposition)), h('td', {}, reasonWord(j.reason_code)),
          h('td', {}, String(j.tool_failures ? j.tool_failures.count : 0)), h('td', {}, ago(j.claimed_at)))))),
    h('section', { class: 'card', 'aria-labelledby': 'h-tf' }, h('h2', { id: 'h-tf' }, 'Tool failures'),
      failures.length ? table('Tool failures', ['job', 'tool', 'count', 'retryable', 'last error'],
        failures.flatMap((j) => j.tool_failures.by_tool.map((t) => h('tr', {}, h('td', {}, h('a', { href: `#/job/${j.id}` }, `job ${j.id}`)),
          h('td', {}, t.tool), h('td', {}, String(t.count)), h('td', {}, t.retryable ? 'yes' : 'no'), h('td', { class: 'ident' }, t.last_error)))))
        : h('p', { class: 'muted' }, 'None.')),
    h('section', { class: 'card', 'aria-labelledby': 'h-adj' }, h('h2', { id: 'h-adj' }, 'Adjudications'),
      adjudicated.length ? adjudicated.map((j) => h('div', { class: 'adj' }, h('h3', {}, h('a', { href: `#/job/${j.id}` }, `job ${j.id}`)), explainAdjudication(j.adjudication)))
        : h('p', { class: 'muted' }, 'No session outcome was reported for this item.'))];
}
