// page-review.js - the review queue (#/review) and an editor's answer to an item waiting in
// manual review.
import { api, qs } from './api.js';
import { ago, age, h, heading, table } from './dom.js';
import { itemAction } from './actions.js';
import { route } from './router.js';
import { isAdmin } from './session.js';

// An editor's answer to an item waiting in manual_review (POST /v1/items/{id}/review).
export function answerButton(itemId, flowStepId, question, after) {
  return h('button', { type: 'button', 'data-action': 'answer-review', onclick: () => itemAction({
    title: `Answer the question on item ${itemId}`,
    text: question ? [h('p', {}, 'The model asked:'), h('blockquote', { class: 'question' }, question),
      'Retry sends your answer to the next attempt; processed or rejected closes the item.']
      : 'It waits for a person. Retry sends your answer to the next attempt; processed or rejected closes the item.',
    label: 'Send answer',
    fields: [{ name: 'decision', label: 'Decision', type: 'select', options: ['retry', 'processed', 'rejected'] },
      { name: 'answer', label: 'Answer (required for retry)', type: 'text', max: 4000 }],
    flowStepId, itemIds: [itemId],
    call: (v) => api('POST', `/v1/items/${itemId}/review`, { decision: v.decision, answer: v.answer || undefined }),
    after,
  }) }, 'Answer…');
}

// The review queue: what waits for a person, oldest question first, and per flow step how
// many wait and how long the oldest question has.
export async function viewReview(params) {
  const fs = params.get('flow_step_id') || '';
  const q = await api('GET', `/v1/reviews?${qs({ flow_step_id: fs, limit: 200 })}`);
  const counts = q.flow_steps.map((f) => h('tr', { 'data-flow-step': f.flow_step_id },
    h('td', {}, h('a', { href: `#/review?${qs({ flow_step_id: f.flow_step_id })}` }, f.flow_step_id)),
    h('td', {}, String(f.waiting)), h('td', {}, String(f.questions)),
    h('td', { class: f.oldest_question_age_seconds > 86400 ? 'warn' : '' }, f.questions ? age(f.oldest_question_age_seconds) : '—')));
  const rows = q.reviews.map((r) => h('tr', { 'data-item': String(r.item_id) },
    h('td', {}, h('a', { href: `#/item/${r.item_id}` }, `item ${r.item_id}`)),
    h('td', { class: 'ident' }, r.item_identifier), h('td', {}, r.flow_step_id),
    h('td', { class: 'question' }, r.question || h('span', { class: 'muted' }, 'no question: parked by a defer')),
    h('td', {}, r.asked_at ? ago(r.asked_at) : ago(r.waiting_since)),
    isAdmin() ? h('td', {}, answerButton(r.item_id, r.flow_step_id, r.question, route)) : null));
  const heads = ['item', 'identifier', 'flow step', 'question', 'waiting'].concat(isAdmin() ? ['action'] : []);
  return [heading('Review', fs ? h('a', { href: '#/review' }, 'all flow steps') : null),
    h('section', { class: 'card', 'aria-labelledby': 'h-rq' }, h('h2', { id: 'h-rq' }, 'Waiting per flow step'),
      table('Waiting per flow step', ['flow step', 'waiting', 'questions', 'oldest question'], counts, 'review-counts')),
    h('section', { class: 'card', 'aria-labelledby': 'h-rl' }, h('h2', { id: 'h-rl' }, 'Waiting for a person'),
      table('Items waiting for a person', heads, rows, 'review-list'))];
}
