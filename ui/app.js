// verdict console: a small single-page app over verdict's JSON API. Hand-written, no build
// step, no dependencies; served by verdictd from the binary under /ui/. Every value from the
// server is put into the page as text (never as HTML). The API key lives in sessionStorage.
//
// ES modules, loaded by index.html from this one (no global state): api.js (the API and the
// key), session.js (who the key is), router.js (the hash is the page), dom.js (building the
// page), words.js (codes in plain words), actions.js (confirm, call, show what it wrote) and
// one page-*.js per page. This module names the pages and wires the header.
import { ApiError, qs, storedKey, storeKey } from './api.js';
import { $ } from './dom.js';
import { viewActivity } from './page-activity.js';
import { viewFlowSteps } from './page-flow-steps.js';
import { viewIncident, viewIncidents } from './page-incidents.js';
import { viewItem } from './page-item.js';
import { viewItems } from './page-items.js';
import { viewJob } from './page-job.js';
import { viewLimit, viewLimits } from './page-limits.js';
import { viewReview } from './page-review.js';
import { viewSearch } from './page-search.js';
import { configure, focusView, route } from './router.js';
import { showSignedIn, signIn, signOut } from './session.js';

const ID = /^\d+$/;
const PAGES = [
  { name: '', view: () => viewFlowSteps(), refresh: true },
  { name: 'items', view: (params) => viewItems(params) },
  { name: 'item', arg: ID, view: (_params, id) => viewItem(id), refresh: true, nav: 'items' },
  { name: 'job', arg: ID, view: (_params, id) => viewJob(id) },
  { name: 'activity', view: (params, _arg, page) => viewActivity(params, page) },
  { name: 'search', view: (params) => viewSearch(params) },
  { name: 'review', view: (params) => viewReview(params) },
  { name: 'incidents', view: () => viewIncidents() },
  { name: 'incident', arg: ID, view: (_params, id) => viewIncident(id), nav: 'incidents' },
  { name: 'limits', view: () => viewLimits(), refresh: true },
  { name: 'limit', arg: /^[A-Za-z0-9._:@-]{1,200}$/, view: (_params, key) => viewLimit(key), refresh: true, nav: 'limits' },
];

async function start() {
  if (storedKey()) {
    try {
      await signIn(storedKey());
      showSignedIn(true);
      await route();
      return;
    } catch (e) {
      signOut();
      $('signin-error').textContent = e instanceof ApiError && e.status === 401 ? 'This key is not known to the server.' : String(e.message || e);
    }
  }
  showSignedIn(false);
  $('key').focus();
}

configure(PAGES, () => { signOut(); return start(); });
$('signin-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  $('signin-error').textContent = '';
  storeKey($('key').value.trim());
  $('key').value = '';
  await start();
});
$('forget').addEventListener('click', () => { signOut(); location.hash = '#/'; start(); });
$('result-close').addEventListener('click', () => { $('result').hidden = true; });
$('top-search').addEventListener('submit', (e) => {
  e.preventDefault();
  const q = $('top-q').value.trim();
  if (q) location.hash = `#/search?${qs({ q })}`;
});
window.addEventListener('hashchange', async () => { $('result').hidden = true; await route(); focusView(); });
start();
