// actions.js - what every action shares: the confirm dialog (with its fields), the result
// panel, and itemAction (confirm, call, then show the transitions the call wrote, read from
// the change feed).
import { ApiError, lastTransitionId, transitionsSince } from './api.js';
import { $, ago, fmt, h, stateBadge, table } from './dom.js';
import { causeWord, reasonWord } from './words.js';

// Ask before an action. fields: [{name, label, type: 'text'|'select', options, required}].
// Resolves to the field values, or null when cancelled.
export function confirmAction(title, body, confirmLabel, fields = []) {
  const dlg = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-body').replaceChildren(...[].concat(body).map((b) => (b instanceof Node ? b : h('p', {}, b))));
  $('confirm-error').textContent = '';
  $('confirm-ok').textContent = confirmLabel;
  const inputs = {};
  $('confirm-fields').replaceChildren(...fields.map((f) => {
    const id = `f-${f.name}`;
    const input = f.type === 'select'
      ? h('select', { id, name: f.name }, f.options.map((o) => h('option', { value: o }, o)))
      : h('input', { id, name: f.name, type: 'text', required: f.required, maxlength: f.max || 2000, autocomplete: 'off' });
    inputs[f.name] = input;
    return h('div', { class: 'field' }, h('label', { for: id }, f.label + (f.required ? ' (required)' : '')), input);
  }));
  return new Promise((resolve) => {
    const done = (v) => {
      $('confirm-form').removeEventListener('submit', onSubmit);
      $('confirm-cancel').removeEventListener('click', onCancel);
      dlg.removeEventListener('cancel', onCancel);
      if (dlg.open) dlg.close();
      resolve(v);
    };
    const onSubmit = (e) => {
      e.preventDefault();
      const values = {};
      for (const [k, el] of Object.entries(inputs)) values[k] = el.value.trim();
      const missing = fields.find((f) => f.required && !values[f.name]);
      if (missing) {
        $('confirm-error').textContent = `${missing.label} is required.`;
        inputs[missing.name].focus();
        return;
      }
      done(values);
    };
    const onCancel = (e) => { e.preventDefault(); done(null); };
    $('confirm-form').addEventListener('submit', onSubmit);
    $('confirm-cancel').addEventListener('click', onCancel);
    dlg.addEventListener('cancel', onCancel);
    dlg.showModal();
    (fields.length ? inputs[fields[0].name] : $('confirm-ok')).focus();
  });
}

export function transitionRows(list) {
  return list.map((t) => h('tr', {},
    h('td', {}, String(t.id)),
    h('td', {}, h('a', { href: `#/item/${t.item_id}` }, `item ${t.item_id}`)),
    h('td', {}, t.from_state ? stateBadge(t.from_state) : '—', ' → ', stateBadge(t.to_state)),
    h('td', {}, causeWord(t.cause)),
    h('td', {}, reasonWord(t.reason_code)),
    h('td', {}, fmt(t.actor)),
    h('td', {}, h('time', { datetime: t.at, title: t.at }, ago(t.at)))));
}
export const transitionHeaders = ['#', 'item', 'change', 'what happened', 'reason', 'by', 'when'];

export function showResult(title, ...body) {
  $('result-title').textContent = title;
  $('result-body').replaceChildren(...body);
  $('result').hidden = false;
  $('result-close').focus();
}
export function showTransitionsResult(title, list, more) {
  showResult(title, more ? h('p', {}, more) : '',
    table('Resulting transitions', transitionHeaders, transitionRows(list), 'result-table'));
}
export function showError(e) {
  showResult('The action failed', h('p', { class: 'error' },
    e instanceof ApiError && e.body ? `${e.body.error}: ${e.body.message}` : String(e.message || e)));
}

// Run an action on items: confirm, call, then show the transitions it wrote.
export async function itemAction({ title, text, label, fields, flowStepId, itemIds, call, after }) {
  const values = await confirmAction(title, text, label, fields);
  if (!values) return;
  try {
    const before = await lastTransitionId();
    const r = await call(values);
    const ids = itemIds || (r && r.item_ids) || null;
    const list = await transitionsSince(before, flowStepId, ids);
    showTransitionsResult(`${label}: done`, list, r && r.requeued !== undefined ? `${r.requeued} items requeued.`
      : r && r.resolved !== undefined ? `${r.resolved} items resolved.` : null);
  } catch (e) {
    showError(e);
  }
  if (after) await after();
}
