// page-activity.js - live activity (#/activity): the change feed of transitions, newest first,
// read every 2 s while the page is shown.
import { api, qs } from './api.js';
import { h, heading } from './dom.js';
import { transitionHeaders, transitionRows } from './actions.js';

export async function viewActivity(params, page) {
  const fs = params.get('flow_step_id') || '';
  const steps = (await api('GET', '/v1/flow-steps')).flow_steps;
  const first = await api('GET', `/v1/transitions?${qs({ after: 0, limit: 1 })}`);
  let after = Math.max(0, first.last_id - 200);
  const body = h('tbody', {});
  const status = h('p', { class: 'muted', id: 'activity-status' }, 'Watching…');
  const poll = async () => {
    if (document.hidden) return;
    try {
      const r = await api('GET', `/v1/transitions?${qs({ after, flow_step_id: fs, limit: 200 })}`);
      after = r.next_after;
      for (const row of transitionRows(r.transitions)) body.prepend(row);
      while (body.children.length > 300) body.lastChild.remove();
      status.textContent = `Watching; last checked ${new Date().toLocaleTimeString()}.`;
    } catch (e) {
      status.textContent = `Could not read the feed: ${e.message}`;
    }
  };
  await poll();
  page.every(2000, poll);
  return [heading('Activity'),
    h('form', { class: 'filters', 'aria-label': 'Filter activity', onsubmit: (e) => { e.preventDefault(); location.hash = `#/activity?${qs({ flow_step_id: e.target.elements.flow_step_id.value })}`; } },
      h('div', { class: 'field' }, h('label', { for: 'act-fs' }, 'Flow step'),
        h('select', { id: 'act-fs', name: 'flow_step_id' }, h('option', { value: '' }, 'any'),
          steps.map((s) => h('option', { value: s.flow_step_id, selected: s.flow_step_id === fs }, s.flow_step_id)))),
      h('button', { type: 'submit' }, 'Apply')),
    status,
    h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': 'Live activity' },
      h('table', { class: 'activity' }, h('caption', { class: 'sr-only' }, 'Transitions, newest first'),
        h('thead', {}, h('tr', {}, transitionHeaders.map((x) => h('th', { scope: 'col' }, x)))), body))];
}
