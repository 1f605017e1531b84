// page-job.js - one job (#/job/{id}) and the explanation of a session outcome's adjudication.
import { api, qs } from './api.js';
import { ago, h, heading, kv, table } from './dom.js';
import { dispositionWord, LABELS, reasonWord, RETRY_RULES } from './words.js';

export function explainAdjudication(a) {
  let rule;
  if (a.outcome === 'retriable') rule = RETRY_RULES[a.retry_reason] || `retry: ${a.retry_reason.replace(/_/g, ' ')}`;
  else if (a.outcome === 'failed' && a.retry_reason === 'budget_exhausted') rule = RETRY_RULES.budget_exhausted;
  else rule = LABELS[a.subtype] || String(a.subtype).replace(/_/g, ' ');
  return h('div', { class: 'explain' },
    h('p', { class: 'verdict' }, h('span', { class: `badge out-${a.outcome}` }, a.outcome), ' because ', h('strong', { class: 'rule' }, rule)),
    kv([['content state', a.content_state], ['label', a.subtype], ['retry reason', a.retry_reason], ['CLI subtype', a.cli_subtype],
      ['infrastructure exit', a.infra_exit], ['write evidence', a.write_evidence ? 'yes' : 'no'],
      a.warnings && a.warnings.length ? ['warnings', a.warnings.join('; ')] : null]),
    a.result_text ? h('details', {}, h('summary', {}, 'Result text'), h('pre', {}, a.result_text)) : null);
}

export async function viewJob(id) {
  const j = (await api('GET', `/v1/jobs/${id}`)).job;
  return [heading(`Job ${j.id}`, h('span', { class: 'badge' }, j.status)),
    h('section', { class: 'card', 'aria-labelledby': 'h-job' }, h('h2', { id: 'h-job' }, 'Job'),
      kv([['item', h('a', { href: `#/item/${j.item_id}` }, `item ${j.item_id}`)], ['flow step', j.flow_step_id], ['worker', j.worker_id],
        ['attempt', String(j.attempt)], ['disposition', dispositionWord(j.disposition)], ['reason', `${reasonWord(j.reason_code)}${j.reason ? `: ${j.reason}` : ''}`],
        ['claimed', ago(j.claimed_at)], ['finished', j.finished_at ? ago(j.finished_at) : 'still running'],
        ['tool failures', String(j.tool_failures.count)],
        ['claim trace', j.claim_trace_id ? h('a', { class: 'ident', href: `#/search?${qs({ q: j.claim_trace_id })}` }, j.claim_trace_id) : '—'],
        ['disposition trace', j.disposition_trace_id ? h('a', { class: 'ident', href: `#/search?${qs({ q: j.disposition_trace_id })}` }, j.disposition_trace_id) : '—']]),
      Object.keys(j.engine_data || {}).length ? h('details', {}, h('summary', {}, 'Engine data'), h('pre', {}, JSON.stringify(j.engine_data, null, 2))) : null),
    h('section', { class: 'card', 'aria-labelledby': 'h-adj' }, h('h2', { id: 'h-adj' }, 'Adjudication'),
      j.adjudication ? explainAdjudication(j.adjudication) : h('p', { class: 'muted' }, 'No session outcome was reported for this job.')),
    j.tool_failures.count ? h('section', { class: 'card', 'aria-labelledby': 'h-tf' }, h('h2', { id: 'h-tf' }, 'Tool failures'),
      table('Tool failures', ['tool', 'count', 'retryable', 'last error'], j.tool_failures.by_tool.map((t) => h('tr', {},
        h('td', {}, t.tool), h('td', {}, String(t.count)), h('td', {}, t.retryable ? 'yes' : 'no'), h('td', { class: 'ident' }, t.last_error))))) : null];
}
