// dom.js - building the page: elements from plain values (every value from the server goes
// in as text, never as HTML), times in words, and the shapes every page uses (a heading, a
// table, a list of facts).
import { stateWord } from './words.js';

export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}
export const $ = (id) => document.getElementById(id);
export const fmt = (v) => (v === null || v === undefined || v === '' ? '—' : String(v));

export function ago(ts) {
  if (!ts) return '—';
  const s = Math.round((Date.now() - Date.parse(ts)) / 1000);
  return age(s) + (s >= 0 ? ' ago' : ' from now');
}
export function age(s) {
  if (s === null || s === undefined) return '—';
  const a = Math.abs(s);
  if (a < 90) return `${a} s`;
  if (a < 5400) return `${Math.round(a / 60)} min`;
  if (a < 172800) return `${Math.round(a / 3600)} h`;
  return `${Math.round(a / 86400)} d`;
}
export const stateBadge = (s) => h('span', { class: `badge st-${s}` }, stateWord(s));

export function table(caption, headers, rows, cls) {
  return h('div', { class: 'table-wrap', tabindex: 0, role: 'region', 'aria-label': caption },
    h('table', { class: cls || '' },
      h('caption', { class: 'sr-only' }, caption),
      h('thead', {}, h('tr', {}, headers.map((x) => h('th', { scope: 'col' }, x)))),
      h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: headers.length, class: 'empty' }, 'Nothing here.')))));
}

export function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(Boolean).map(([k, v]) => h('div', {}, h('dt', {}, k), h('dd', {}, v))));
}

export function heading(text, ...extra) {
  return h('div', { class: 'view-head' }, h('h1', { id: 'view-title', tabindex: -1 }, text), ...extra);
}
