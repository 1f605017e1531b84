// session.js - who the key is (GET /v1/whoami): its actor and role, so pages offer only the
// actions the key may use. The one piece of state the pages share, read through isAdmin().
import { api, forgetKey, storeKey } from './api.js';
import { $ } from './dom.js';

const me = { actor: null, role: null };

export const isAdmin = () => me.role === 'admin';

export async function signIn(key) {
  storeKey(key);
  const w = await api('GET', '/v1/whoami');
  me.actor = w.actor;
  me.role = w.role;
}

export function signOut() {
  forgetKey();
  me.actor = null;
  me.role = null;
}

export function showSignedIn(on) {
  $('signin').hidden = on;
  $('nav').hidden = !on;
  $('top-search').hidden = !on;
  $('who').hidden = !on;
  $('view').hidden = !on;
  if (on) $('who-text').textContent = `${me.actor} (${me.role})`;
}
