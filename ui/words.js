// words.js - the state machine's names in plain words (docs/architecture.md, the states), so
// no page shows a bare code, and the lists of states the pages offer.

export const STATES = ['available', 'claimed', 'deferred', 'processed', 'rejected', 'manual_review', 'failed'];
export const PARKED = ['manual_review', 'failed'];
export const REQUEUEABLE = ['failed', 'manual_review', 'rejected'];

const STATE_WORDS = { manual_review: 'manual review' };
const CAUSE_WORDS = {
  register: 'registered', claim: 'claimed by a worker', complete: 'completed by the worker',
  reject_source: 'source rejected by the worker', defer_item: 'deferred by the worker', fail: 'reported failed by the worker',
  skip_item: 'skipped by the worker', session_outcome: 'session outcome reported', lease_expired: 'lease expired: the worker stopped answering',
  requeue: 'requeued by an admin', release: 'released by its worker', admin_release: 'claim released by an admin',
  resolve: 'decided by hand', request_review: 'the model asked an editor', review: 'answered by an editor',
};
const REASON_WORDS = {
  tool_error: 'a tool failed', retry_budget_exhausted: 'retry budget spent', quality_gate: 'a quality check failed',
  too_thin: 'too little content', duplicate: 'a duplicate', off_topic: 'off topic', other: 'other reason',
  review_requested: 'the model asked an editor', review_answered: 'an editor answered', requeue: 'requeued',
  lease_expired: 'the lease expired', admin_release: 'an admin released the claim', resolve: 'decided by hand',
  engine_error: 'the engine failed',
};
const DISPOSITION_WORDS = {
  complete: 'completed', reject_source: 'source rejected', defer_item: 'deferred', fail: 'failed',
  skip_item: 'skipped (old call)', session_outcome: 'session outcome', request_review: 'asked an editor',
};

// What decided a session outcome, in the words of SPEC session-outcome.md §4.
export const RETRY_RULES = {
  resume: 'the agent API asked to resume (max turns, context exhausted, an API error or a kill by someone else)',
  early_stop: 'the session ended normally but its result lacks the completion marker',
  empty_output: 'the session ended with no output (it was probably killed)',
  thinking_stall: 'the session stalled on a turn that only thought',
  drain_race: 'the content was not on a channel that is watched for it',
  stale: 'the session went stale', idle_stall: 'the session stalled while idle',
  contract_recovery: 'the content checks failed but the session wrote something, so it is retried',
  zero_writes: 'the session said it succeeded but wrote nothing where writes were expected',
  completed_no_flush: 'the session completed without saving its writes',
  budget_exhausted: 'the retry budget (max_consecutive_retries) is used up',
};
export const LABELS = {
  success: 'the session succeeded with its content complete',
  recovered_from_stale: 'a stale session still had a complete result', recovered_from_idle_stall: 'an idle session still had a complete result',
  empty_result: 'the result was empty', context_exhausted: 'the context was exhausted',
  missing_completion_marker: 'the completion marker was missing', adjudicated_failure: 'the content checks failed',
};

export const dispositionWord = (d) => (d ? DISPOSITION_WORDS[d] || d : '—');
export const stateWord = (s) => STATE_WORDS[s] || s;
export const causeWord = (c) => CAUSE_WORDS[c] || c.replace(/_/g, ' ');
// a session outcome's retry reason reads as its rule (RETRY_RULES)
export const reasonWord = (r) => {
  if (!r) return '—';
  const words = REASON_WORDS[r] || RETRY_RULES[r];
  return words ? `${words} (${r})` : r;
};
