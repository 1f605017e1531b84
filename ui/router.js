// router.js - the hash is the page: '#/name/arg?query'. The page table is given by app.js
// (configure); a page is an async function that returns the view's elements. The overview and
// an open item refresh themselves every REFRESH_MS; a page's own timers stop when the next
// page is shown. Pages call route() to draw the current page again after an action.
import { ApiError } from './api.js';
import { $, h, heading } from './dom.js';

export const REFRESH_MS = 5000;

const router = { pages: [], signedOut: null, timers: [], shown: 0 };

// pages: [{ name, arg (a RegExp the second part must match), view(params, arg, { every }),
// refresh, nav (the main menu entry it belongs to, default its name) }]; the page named '' is
// the overview, shown for any hash no page matches. A view's every(ms, fn) runs fn until
// another page is shown. signedOut: called when the key is refused.
export function configure(pages, signedOut) {
  router.pages = pages;
  router.signedOut = signedOut;
}

// Run fn every ms until the next page is shown; nothing when that page is already gone.
function every(shown, ms, fn) {
  if (router.shown === shown) router.timers.push(setInterval(fn, ms));
}
function stopTimers() {
  for (const t of router.timers) clearInterval(t);
  router.timers = [];
}

// Draw the page again every REFRESH_MS, not while the tab is hidden, a dialog is open or a
// result is shown (it would move what the operator reads).
function startRefresh(render, shown) {
  every(shown, REFRESH_MS, async () => {
    if (document.hidden || $('confirm').open || !$('result').hidden) return;
    try {
      const content = await render();
      if (router.shown !== shown) return; // another page (or this one again) was drawn since
      const focused = document.activeElement && document.activeElement.id;
      $('view').replaceChildren(...content.filter(Boolean));
      if (focused && $(focused)) $(focused).focus();
      $('view').dataset.refreshed = String(Date.now());
    } catch { /* the next tick tries again */ }
  });
}

export async function route() {
  stopTimers();
  const shown = ++router.shown;
  const hash = location.hash || '#/';
  const [path, query] = hash.slice(1).split('?');
  const params = new URLSearchParams(query || '');
  const parts = path.split('/').filter(Boolean);
  const name = parts[0] || '';
  const arg = parts[1] || '';
  const named = router.pages.find((p) => p.name === name);
  const page = router.pages.find((p) => p.name === name && (p.arg ? p.arg.test(arg) : true));
  const current = `#/${named ? named.nav || named.name : name}`;
  for (const a of document.querySelectorAll('#nav a')) a.toggleAttribute('aria-current', a.getAttribute('href') === current);
  const view = $('view');
  try {
    const chosen = page || router.pages.find((p) => p.name === '');
    const render = () => chosen.view(params, arg, { every: (ms, fn) => every(shown, ms, fn) });
    const content = await render();
    if (router.shown !== shown) return; // a later route() draws its own page
    view.replaceChildren(...content.filter(Boolean));
    if (page && page.refresh) startRefresh(render, shown);
    document.title = `${$('view-title').textContent} · verdict`;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return router.signedOut();
    view.replaceChildren(heading('Something went wrong'), h('p', { class: 'error', role: 'alert' },
      e instanceof ApiError && e.body ? `${e.body.error}: ${e.body.message}` : String(e.message || e)));
  }
}

export function focusView() {
  const t = $('view-title');
  if (t) t.focus({ preventScroll: false });
}
