// api.js - the one way the console talks to verdict: fetch with the API key (kept in this
// tab's sessionStorage, nowhere else), JSON in and out, a refusal thrown as an ApiError with
// its envelope; and the change feed's reads that actions use to show what they wrote.
const KEY = 'verdict.apiKey';

export const storedKey = () => sessionStorage.getItem(KEY);
export const storeKey = (key) => sessionStorage.setItem(KEY, key);
export const forgetKey = () => sessionStorage.removeItem(KEY);

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${storedKey() || ''}` };
  const init = { method, headers, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let json;
  try { json = text ? JSON.parse(text) : null; } catch { json = null; }
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}
export const qs = (o) => new URLSearchParams(Object.entries(o).filter(([, v]) => v !== undefined && v !== null && v !== '')).toString();

// The newest transition id now: what an action's transitions come after.
export async function lastTransitionId() {
  return (await api('GET', `/v1/transitions?${qs({ after: 0, limit: 1 })}`)).last_id;
}
// The transitions after `after` (of one flow step), optionally only of some items.
export async function transitionsSince(after, flowStepId, itemIds) {
  const start = after;
  // The feed holds back rows made after a transaction that is still open began (README,
  // "change feed"): when the action names its items, wait up to 3 s for a row of each.
  for (let attempt = 0; ; attempt++) {
    const out = [];
    after = start;
    for (let page = 0; page < 20; page++) {
      const r = await api('GET', `/v1/transitions?${qs({ after, flow_step_id: flowStepId, limit: 500 })}`);
      out.push(...r.transitions);
      after = r.next_after;
      if (r.caught_up) break;
    }
    if (!itemIds) return out;
    const list = out.filter((t) => itemIds.includes(t.item_id));
    const seen = new Set(list.map((t) => t.item_id));
    if (seen.size >= itemIds.length || attempt >= 15) return list;
    await new Promise((done) => setTimeout(done, 200));
  }
}
