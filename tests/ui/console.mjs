// tests/ui/console.mjs - the operator console in a real browser (issue 19).
//
// Starts the real verdictd against a fresh PostgreSQL database, makes data through the API
// (items in every state, a job with tool failures and an adjudication, a live claim), then
// drives Debian's chromium (headless, through playwright-core; no browser is downloaded):
// signs in with an admin key, loads every view, follows an item from the list to its
// timeline, performs each action (resolve, requeue one, bulk requeue and bulk resolve after
// their dry-run counts, pause and resume, release a claim) and sees the transition it wrote,
// reads the limits (a throttled key on the overview, the Limits page, a key's page),
// checks that a reader key sees no action buttons, checks the phone layout (390 px) does not
// scroll sideways, checks that every ES module app.js imports is served as JavaScript (and
// every module of ui/ is imported), and fails on any console error or page error. Screenshots of the main views
// go to --out (build/ui-screenshots by default).
//
//   node tests/ui/console.mjs --verdictd build/verdictd [--out build/ui-screenshots]
//
// Needs VERDICT_TEST_DATABASE_URL (exits 77, skipped, without it), psql, /usr/bin/chromium
// and tests/ui/node_modules (installed here with `npm ci` when missing). Exits 1 on failure.
/* global document, location -- the page.evaluate and waitForFunction callbacks run in the page */
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, mkdtempSync, openSync, closeSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const started = Date.now();
let verdictd = null;
let outDir = null;
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--verdictd') verdictd = path.resolve(process.argv[++i]);
  else if (process.argv[i] === '--out') outDir = path.resolve(process.argv[++i]);
  else { console.error(`usage: node tests/ui/console.mjs --verdictd <path> [--out <dir>]`); process.exit(2); }
}
if (!verdictd || !existsSync(verdictd)) { console.error('ui: --verdictd <existing binary> is required'); process.exit(2); }
outDir = outDir || path.join(path.dirname(verdictd), 'ui-screenshots');
const DB_BASE = process.env.VERDICT_TEST_DATABASE_URL;
if (!DB_BASE) { console.log('VERDICT_TEST_DATABASE_URL is not set: skipping'); process.exit(77); }
const CHROMIUM = process.env.VERDICT_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) { console.error(`ui: no browser at ${CHROMIUM} (apt-get install chromium)`); process.exit(1); }
if (!existsSync(path.join(HERE, 'node_modules/playwright-core'))) {
  console.log('ui: installing tests/ui npm packages (npm ci)');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'],
    { cwd: HERE, stdio: 'inherit', env: { ...process.env, PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: '1' } });
  if (r.status !== 0) { console.error('ui: npm ci in tests/ui failed'); process.exit(1); }
}
const { chromium } = createRequire(path.join(HERE, 'package.json'))('playwright-core');

// ------------------------------------------------------------------------------------------
// checks

const failures = [];
let checks = 0;
let failedChecks = 0;
function check(cond, what) {
  checks++;
  if (!cond) { failedChecks++; failures.push(what); console.log(`  FAIL ${what}`); }
  return !!cond;
}
const step = (s) => console.log(`ui: ${s}`);

// ------------------------------------------------------------------------------------------
// database, server, API

const RUN = `${process.pid}_${Date.now().toString(36)}`;
const DB_NAME = `verdict_ui_${RUN}`;
const TOKENS = { reader: `rd-${randomUUID()}`, worker: `wk-${randomUUID()}`, admin: `ad-${randomUUID()}` };
const LOG = path.join(os.tmpdir(), `verdict-ui-${RUN}.log`);
let server = null;
let serverExit = null;
let dbCreated = false;
let base = '';
let userDataDir = null;
let browser = null;

function psql(sql) {
  const r = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', DB_BASE, '-c', sql], { encoding: 'utf8', timeout: 60000 });
  if (r.status !== 0) throw new Error(`psql -c "${sql}": ${r.stderr || r.error}`);
}
function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startServer() {
  psql(`CREATE DATABASE ${DB_NAME}`);
  dbCreated = true;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const log = openSync(LOG, 'w');
  server = spawn(verdictd, ['serve'], {
    stdio: ['ignore', log, log],
    env: { ...process.env, VERDICT_DATABASE_URL: `${DB_BASE} dbname=${DB_NAME}`, VERDICT_LISTEN: `127.0.0.1:${port}`,
      VERDICT_API_KEYS: `dash:reader:${TOKENS.reader},bot:worker:${TOKENS.worker},ops:admin:${TOKENS.admin}`,
      VERDICT_THREADS: '4', VERDICT_LOG_LEVEL: 'warn' },
  });
  closeSync(log);
  server.on('exit', (code, signal) => { serverExit = { code, signal }; });
  for (let i = 0; i < 600; i++) {
    if (serverExit) throw new Error(`verdictd exited at start (${JSON.stringify(serverExit)})`);
    try { if ((await fetch(`${base}/readyz`)).status === 200) return; } catch { /* not yet */ }
    await sleep(50);
  }
  throw new Error('verdictd did not become ready within 30 s');
}

async function api(method, p, body, role = 'admin') {
  const res = await fetch(`${base}${p}`, {
    method, headers: { Authorization: `Bearer ${TOKENS[role]}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// ------------------------------------------------------------------------------------------
// the data the views show

const FS = 'news_en';
const FS2 = 'blog_de';
const RETRY_SESSION = {
  returncode: 0, completion_marker: '%%ORDER_UP%%',
  stdout: '{"type": "result", "subtype": "success", "is_error": false, "result": "I did the work but forgot the marker."}',
};
const data = {};

async function claim1(fs) {
  const r = await api('POST', '/v1/claims', { flow_step_id: fs, worker_id: 'bot-1', limit: 1 }, 'worker');
  if (r.claims.length !== 1) throw new Error(`no claim in ${fs}`);
  return r.claims[0];
}
const dispose = (c, body) => api('POST', `/v1/jobs/${c.job_id}/disposition`, { claim_token: c.claim_token, ...body }, 'worker');

async function makeData() {
  const mk = (id, extra = {}) => ({ flow_step_id: FS, source_type: 'rss', item_identifier: `https://news.example/${id}`, ...extra });
  // one at a time, so each claim takes the item named
  for (const [id, extra] of [['done', {}], ['spam', {}], ['review-1', {}], ['review-2', {}], ['review-3', {}],
    ['broken-1', { max_attempts: 1 }], ['broken-2', { max_attempts: 1 }], ['retry', {}], ['live', {}]]) {
    const reg = await api('POST', '/v1/items', { items: [mk(id, extra)] }, 'worker');
    data[id] = reg.items[0].id;
    const c = await claim1(FS);
    data[`${id}:job`] = c.job_id;
    if (id === 'done') await dispose(c, { disposition: 'complete' });
    else if (id === 'spam') await dispose(c, { disposition: 'reject_source', reason_code: 'spam', reason: 'link farm' });
    else if (id.startsWith('review')) await dispose(c, { disposition: 'defer_item', reason_code: 'quality_gate', manual_review: true, reason: 'needs an editor' });
    else if (id.startsWith('broken')) await dispose(c, { disposition: 'fail', error: 'the parser crashed' });
    else if (id === 'retry') {
      await api('POST', `/v1/jobs/${c.job_id}/tool-failures`, { claim_token: c.claim_token, tool: 'fetch', args: { url: 'https://news.example/retry' }, error: 'HTTP 503 from upstream', kind: 'transient' }, 'worker');
      await api('POST', `/v1/jobs/${c.job_id}/session-outcome`, { claim_token: c.claim_token, session: RETRY_SESSION }, 'worker');
    } else if (id === 'live') data.liveToken = c.claim_token;
  }
  await api('POST', '/v1/items', { items: [mk('waiting'), ...[1, 2, 3].map((i) => ({ flow_step_id: FS2, source_type: 'blog', item_identifier: `post-${i}` }))] }, 'worker');
}

// ------------------------------------------------------------------------------------------
// the browser

const consoleErrors = [];
// Pages of the one browser context (a fresh profile); sessionStorage, and so the key, is per
// page.
async function newPage(viewport) {
  const page = await browser.newPage();
  await page.setViewportSize(viewport);
  page.setDefaultTimeout(10000);
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') consoleErrors.push(`${m.type()}: ${m.text()} (${page.url()})`); });
  page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message} (${page.url()})`));
  page.on('requestfailed', (r) => consoleErrors.push(`request failed: ${r.url()} ${r.failure() && r.failure().errorText}`));
  return page;
}
async function shot(page, name) {
  await page.screenshot({ path: path.join(outDir, `${name}.png`), fullPage: true });
}
async function signIn(page, role) {
  await page.goto(`${base}/ui/`);
  await page.locator('#key').fill(TOKENS[role]);
  await page.getByRole('button', { name: 'Use this key' }).click();
  await page.locator('#who-text').filter({ hasText: `(${role})` }).waitFor();
}
// Show another view and wait until it is drawn (the old one is taken away first, so that a
// check never reads the view before).
async function go(page, hash) {
  await page.evaluate((h) => { document.getElementById('view').replaceChildren(); location.hash = h; }, hash);
  await page.locator('#view-title').waitFor();
}
// Wait for the result panel and return the text of its transition rows.
async function resultRows(page) {
  await page.locator('#result:not([hidden])').waitFor();
  const rows = await page.locator('#result-body tbody tr').allInnerTexts();
  await page.locator('#result-close').click();
  return rows;
}
// Fill and confirm the open dialog.
async function confirm(page, fields = {}) {
  const dlg = page.locator('dialog#confirm[open]');
  await dlg.waitFor();
  for (const [name, value] of Object.entries(fields)) {
    const el = dlg.locator(`[name="${name}"]`);
    if ((await el.evaluate((e) => e.tagName)) === 'SELECT') await el.selectOption(value);
    else await el.fill(value);
  }
  const body = await dlg.locator('#confirm-body').innerText();
  await dlg.locator('#confirm-ok').click();
  await page.locator('dialog#confirm[open]').waitFor({ state: 'detached' }).catch(() => {});
  await page.waitForFunction(() => !document.querySelector('dialog#confirm').open);
  return body;
}

async function adminRun(releaseLanded) {
  const page = await newPage({ width: 1280, height: 900 });
  step('sign in (admin), flow steps view');
  await signIn(page, 'admin');
  const card = page.locator(`article[data-flow-step="${FS}"]`);
  await card.waitFor();
  check((await card.innerText()).includes('manual review'), 'the flow step card shows counts by state');
  const mr = await card.locator('a.st-manual_review .n').innerText();
  check(mr === '3', `news_en shows 3 items in manual_review (saw ${mr})`);
  check((await card.locator('.facts').innerText()).includes('Stuck claims'), 'the card shows stuck claims');
  check(await page.locator(`article[data-flow-step="${FS2}"]`).count() === 1, 'the second flow step is listed');
  await shot(page, '1-flow-steps');

  step('items list -> item timeline');
  await card.locator('a.st-manual_review').click();
  await page.locator('#view-title', { hasText: 'Items' }).waitFor();
  const rows = page.locator('table.items tbody tr');
  check(await rows.count() === 3, 'the manual_review filter lists 3 items');
  check((await page.locator('#flt-state').inputValue()) === 'manual_review', 'the state filter is set from the link');
  await shot(page, '2-items');
  await page.getByRole('link', { name: `item ${data['review-1']}`, exact: true }).click();
  await page.locator('#view-title', { hasText: `Item ${data['review-1']}` }).waitFor();
  const timeline = await page.locator('ol.timeline').innerText();
  check(['registered', 'claimed by a worker', 'deferred by the worker'].every((c) => timeline.includes(c)), `the timeline says registered, claimed and deferred in words (${timeline.replace(/\s+/g, ' ')})`);
  check(/Why: the worker asked for a person to look/.test(timeline), `the parking transition says why (${timeline.replace(/\s+/g, ' ')})`);
  check(!/defer_item|decided by [A-G]/.test(timeline), 'no bare internal codes in the timeline');
  check(timeline.includes('needs an editor'), 'the timeline shows the reason');
  await shot(page, '3-item-timeline');

  step('resolve one (manual_review -> rejected)');
  await page.locator('button[data-action="resolve"]').click();
  // Escape cancels without changing anything
  await page.locator('dialog#confirm[open]').waitFor();
  await page.keyboard.press('Escape');
  await page.waitForFunction(() => !document.querySelector('dialog#confirm').open);
  check((await page.locator('h1 + .badge, .view-head .badge').first().innerText()) === 'manual review', 'Escape cancelled the dialog');
  await page.locator('button[data-action="resolve"]').click();
  // another writer holds a transaction open across the action: the feed holds the resolve's
  // row back until it ends (sql/migrations/0008), and the console waits for it (app.js transitionsSince)
  const holder = spawn('psql', ['-X', '-q', '-d', `${DB_BASE} dbname=${DB_NAME}`, '-c',
    'BEGIN; SELECT txid_current(); SELECT pg_sleep(2); COMMIT;'], { stdio: 'ignore' });
  const held = new Promise((done) => holder.on('exit', done));
  await sleep(300);
  await confirm(page, { outcome: 'rejected', reason: 'junk source', reason_code: 'spam' });
  let res = await resultRows(page);
  await held;
  check(res.length === 1 && /manual review\s*→\s*rejected/.test(res[0]) && res[0].includes('decided by hand') && res[0].includes('ops'),
    `resolve shows its transition (${JSON.stringify(res)})`);
  await page.locator('.view-head .badge', { hasText: 'rejected' }).waitFor();

  step('requeue one (rejected -> available)');
  await page.locator('button[data-action="requeue"]').click();
  await confirm(page, { reason: 'second look' });
  res = await resultRows(page);
  check(res.length === 1 && /rejected\s*→\s*available/.test(res[0]) && res[0].includes('requeue'), `requeue shows its transition (${JSON.stringify(res)})`);

  step('bulk requeue of failed items, after its dry-run count');
  await go(page, `#/items?flow_step_id=${FS}&state=failed&order=desc`);
  await page.locator('button[data-action="bulk-requeue"]').click();
  let text = await confirm(page, { reason: 'parser fixed' });
  check(/2 items would be requeued/.test(text), `the dry run counts 2 failed items (${text})`);
  res = await resultRows(page);
  check(res.length === 2 && res.every((r) => /failed\s*→\s*available/.test(r) && r.includes('requeue')), `bulk requeue shows 2 transitions (${JSON.stringify(res)})`);

  step('bulk resolve of manual_review items, after its dry-run count');
  await go(page, `#/items?flow_step_id=${FS}&state=manual_review&order=desc`);
  await page.locator('button[data-action="bulk-resolve"]').click();
  text = await confirm(page, { outcome: 'processed', reason: 'published by hand' });
  check(/2 items would be resolved/.test(text), `the dry run counts 2 manual_review items (${text})`);
  res = await resultRows(page);
  check(res.length === 2 && res.every((r) => /manual review\s*→\s*processed/.test(r) && r.includes('decided by hand')), `bulk resolve shows 2 transitions (${JSON.stringify(res)})`);
  // (the list is drawn again after the action)
  const emptied = await page.locator('table.items tbody td.empty').waitFor({ timeout: 5000 }).then(() => true, () => false);
  check(emptied, 'the manual_review list is empty afterwards');

  step('pause and resume a flow step');
  await go(page, '#/');
  const card2 = page.locator(`article[data-flow-step="${FS2}"]`);
  await card2.locator('button[data-action="pause"]').click();
  await confirm(page);
  await page.locator('#result:not([hidden])').waitFor();
  check((await page.locator('#result-title').innerText()).includes('paused'), 'pause shows the flow step paused');
  await page.locator('#result-close').click();
  await card2.locator('.badge.paused').waitFor();
  const claimed = await api('POST', '/v1/claims', { flow_step_id: FS2, worker_id: 'bot-2' }, 'worker');
  check(claimed.claims.length === 0, 'a paused flow step gives no claims');
  await shot(page, '4-flow-steps-paused');
  await card2.locator('button[data-action="resume"]').click();
  await confirm(page);
  await page.locator('#result:not([hidden])').waitFor();
  await page.locator('#result-close').click();
  await card2.locator('.badge.running').waitFor();

  step('a tooling incident on its flow step, resolved with its items requeued');
  const FS3 = 'wiki_incident';
  await api('PATCH', `/v1/flow-steps/${FS3}`, { incident_min_items: 1 });
  await api('POST', '/v1/items', { items: [{ flow_step_id: FS3, source_type: 'rss', item_identifier: 'w-1' }] }, 'worker');
  const ci = await claim1(FS3);
  await api('POST', `/v1/jobs/${ci.job_id}/tool-failures`, { claim_token: ci.claim_token, tool: 'wiki_upsert', error: "target_path '/srv/wiki/1.md' must stay inside root" }, 'worker');
  await dispose(ci, { disposition: 'defer_item', reason_code: 'tool_error', retry_after_seconds: 3600 });
  await go(page, `#/items?flow_step_id=${FS3}`); // the view is '#/' already: leave it to draw it again
  await go(page, '#/');
  const inc = page.locator(`article[data-flow-step="${FS3}"] [data-incident]`);
  await inc.waitFor();
  check((await inc.innerText()).includes("'wiki_upsert' fails the same way on 1 item"), 'the flow step card shows its open tooling incident');
  await shot(page, '4b-tooling-incident');
  await inc.locator('button[data-action="resolve-incident"]').click();
  await confirm(page, { reason: 'wiki_upsert fixed' });
  const incRows = await resultRows(page);
  check(incRows.some((r) => r.includes('available')), `resolving puts the incident's item back (rows: ${incRows.join(' | ')})`);
  await page.locator(`article[data-flow-step="${FS3}"] [data-incident]`).waitFor({ state: 'detached' });

  step('release a live claim');
  await go(page, `#/item/${data.live}`);
  check(await page.locator('button[data-action="release"]').count() === 1, 'a claimed item offers "Release claim"');
  if (releaseLanded) {
    await page.locator('button[data-action="release"]').click();
    await confirm(page, { reason: 'worker is gone' });
    res = await resultRows(page);
    check(res.length === 1 && /claimed\s*→\s*available/.test(res[0]) && res[0].includes('admin_release'), `release shows its transition (${JSON.stringify(res)})`);
    const hb = await fetch(`${base}/v1/jobs/${data['live:job']}/heartbeat`, { method: 'POST', headers: { Authorization: `Bearer ${TOKENS.worker}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ claim_token: data.liveToken }) });
    check(hb.status === 409, `the released holder's heartbeat is 409 (got ${hb.status})`);
  } else {
    // ENABLE AFTER MERGE: POST /v1/items/{item_id}/release (issue 20) is not in this build's
    // openapi/verdict.yaml, so the click is skipped; the step runs by itself once it is.
    console.log('ui: SKIPPED the release click: POST /v1/items/{item_id}/release is not in this build (issue 20)');
  }

  step('job view with its adjudication explained');
  await go(page, `#/item/${data.retry}`);
  check((await page.locator('section[aria-labelledby="h-tf"]').innerText()).includes('HTTP 503 from upstream'), 'the item view lists its tool failures');
  check((await page.locator('section[aria-labelledby="h-adj"]').innerText()).includes('early_stop'), 'the item view shows its adjudication');
  await shot(page, '5-item-adjudicated');
  await page.getByRole('link', { name: `job ${data['retry:job']}` }).first().click();
  await page.locator('#view-title', { hasText: `Job ${data['retry:job']}` }).waitFor();
  const adj = await page.locator('section[aria-labelledby="h-adj"]').innerText();
  check(adj.includes('retriable') && adj.includes('content state') && adj.includes('absent') && /because\s+the session ended normally but its result lacks the completion marker/.test(adj) && !/decided by|D\/F|\bD: /.test(adj),
    `the job view explains the adjudication (${adj.replace(/\s+/g, ' ')})`);
  await shot(page, '6-job');

  step('live activity from the change feed');
  await go(page, '#/activity');
  await page.locator('table.activity tbody tr').first().waitFor();
  const reg = await api('POST', '/v1/items', { items: [{ flow_step_id: FS, source_type: 'rss', item_identifier: 'https://news.example/late' }] }, 'worker');
  const lateId = reg.items[0].id;
  await page.locator('table.activity tbody tr').first().filter({ hasText: `item ${lateId}` }).waitFor({ timeout: 15000 });
  check(true, 'a new registration appears at the top of the activity view');
  await shot(page, '7-activity');

  step('keyboard: skip link and focus');
  await go(page, '#/');
  await page.reload();
  await page.locator(`article[data-flow-step="${FS}"]`).waitFor();
  await page.keyboard.press('Tab');
  check(await page.evaluate(() => document.activeElement && document.activeElement.classList.contains('skip')), 'Tab first reaches the skip link');
  await page.close();
}

async function readerRun() {
  step('reader key: no action buttons anywhere');
  const page = await newPage({ width: 1280, height: 900 });
  await signIn(page, 'reader');
  await page.locator(`article[data-flow-step="${FS}"]`).waitFor();
  check(await page.locator('[data-action]').count() === 0, 'the reader sees no action on the flow steps view');
  await go(page, `#/items?flow_step_id=${FS}&state=failed`);
  check(await page.locator('[data-action]').count() === 0, 'the reader sees no bulk action');
  for (const id of [data['review-3'], data.live, data['broken-1']]) {
    await go(page, `#/item/${id}`);
    check(await page.locator('#view-title').innerText() === `Item ${id}`, `the reader sees item ${id}`);
    check(await page.locator('[data-action]').count() === 0, `the reader sees no action on item ${id}`);
  }
  await shot(page, '8-reader-item');
  await page.close();
}

// One JSON-RPC call to verdict's MCP endpoint, bound to a claim (Verdict-Claim), as a model's
// host sends it (Streamable HTTP; the answer may come as JSON or as one SSE event).
async function mcp(claim, method, params, id) {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKENS.worker}`, 'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18',
      'Verdict-Claim': `${claim.job_id}:${claim.claim_token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
  });
  const text = await res.text();
  const json = text.startsWith('{') ? text : (text.split('\n').find((l) => l.startsWith('data:')) || 'data:null').slice(5);
  return JSON.parse(json);
}

// The operator's first questions and the editor's loop: search from the header on any page,
// a tooling incident's own page (from the overview, its item and the resolved list), the
// overview refreshing itself (and not on a hidden tab), and a model's request_review over MCP
// answered in the console and carried by the next claim and its briefing.
async function operatorRun() {
  const page = await newPage({ width: 1280, height: 900 });
  await signIn(page, 'admin');
  await page.locator(`article[data-flow-step="${FS}"]`).waitFor();

  step('search by identifier from the header (prefix, exact, trace id)');
  await go(page, '#/activity');
  await page.locator('#top-q').fill('post-');
  await page.locator('#top-search button').click();
  await page.locator('#view-title', { hasText: 'Search: post-' }).waitFor();
  let rows = await page.locator('table.search-results tbody tr').allInnerTexts();
  check(rows.length === 3 && rows.every((r) => /post-[123]/.test(r)), `a prefix finds the 3 items (${JSON.stringify(rows)})`);
  await page.locator('#top-q').fill('https://news.example/spam');
  await page.locator('#top-q').press('Enter');
  await page.locator('#view-title', { hasText: 'Search: https://news.example/spam' }).waitFor();
  rows = await page.locator('table.search-results tbody tr').allInnerTexts();
  check(rows.length === 1 && rows[0].includes('(exact)') && rows[0].includes('rejected'), `an exact identifier finds its item with its state (${JSON.stringify(rows)})`);
  await shot(page, '13-search');
  await page.getByRole('link', { name: `item ${data.spam}`, exact: true }).click();
  await page.locator('#view-title', { hasText: `Item ${data.spam}` }).waitFor();
  const job = (await api('GET', `/v1/jobs/${data['spam:job']}`)).job;
  await go(page, `#/search?q=${job.claim_trace_id}`);
  rows = await page.locator('section[aria-labelledby="h-traced"] tbody tr').allInnerTexts();
  check(rows.length === 1 && rows[0].includes(`job ${job.id}`) && rows[0].includes('its claim'), `a trace id finds the job it claimed (${JSON.stringify(rows)})`);
  await go(page, `#/job/${job.id}`);
  check((await page.locator('#view').innerText()).includes(job.disposition_trace_id), 'the job view shows its traces');

  step('a tooling incident and its page');
  const FS3 = 'wiki_sync';
  await api('PATCH', `/v1/flow-steps/${FS3}`, { incident_min_items: 2 });
  const incItems = [];
  for (const n of [1, 2]) {
    const reg = await api('POST', '/v1/items', { items: [{ flow_step_id: FS3, source_type: 'wiki', item_identifier: `page-${n}` }] }, 'worker');
    incItems.push(reg.items[0].id);
    const c = await claim1(FS3);
    await api('POST', `/v1/jobs/${c.job_id}/tool-failures`, { claim_token: c.claim_token, tool: 'wiki_upsert',
      error: `target_path '/srv/wiki/page-${n}.md' must stay inside root` }, 'worker');
    await dispose(c, { disposition: 'defer_item', reason_code: 'tool_error' });
  }
  const inc = (await api('GET', `/v1/tool-incidents?state=open&flow_step_id=${FS3}`)).tool_incidents[0];
  check(Boolean(inc), 'two items failing the same way open an incident');
  await go(page, '#/');
  await page.locator(`p.incident[data-incident="${inc.id}"] a`).click();
  await page.locator('#view-title', { hasText: `Tooling incident #${inc.id}` }).waitFor();
  let text = await page.locator('#view').innerText();
  check(text.includes("target_path '/srv/wiki/page-") && text.includes('wiki_upsert'), `the incident page shows the sample error as it was and the tool (${text.slice(0, 200).replace(/\s+/g, ' ')})`);
  rows = await page.locator('section[aria-labelledby="h-aff"] tbody tr').allInnerTexts();
  check(rows.length === 2 && rows.every((r) => r.includes('deferred')), `it lists the affected items with their states (${JSON.stringify(rows)})`);
  check((await page.locator('section[aria-labelledby="h-itl"] li').count()) >= 3, 'it has a timeline');
  await shot(page, '14-incident');
  await go(page, `#/item/${incItems[0]}`);
  await page.locator(`section[aria-labelledby="h-inc"] a[href="#/incident/${inc.id}"]`).click();
  await page.locator('#view-title', { hasText: `Tooling incident #${inc.id}` }).waitFor();
  check(true, 'the item links to the incident it touched');
  await page.locator('button[data-action="resolve-incident"]').click();
  await confirm(page, { reason: 'root fixed' });
  rows = await resultRows(page);
  check(rows.length === 2 && rows.every((r) => /deferred\s*→\s*available/.test(r)), `resolving requeues its items (${JSON.stringify(rows)})`);
  await go(page, '#/incidents');
  await page.locator(`section[aria-labelledby="h-res"] tr[data-incident="${inc.id}"] a`).click();
  await page.locator('#view-title', { hasText: `Tooling incident #${inc.id}` }).waitFor();
  text = await page.locator('#view').innerText();
  check(text.includes('resolved by ops: root fixed'), 'the resolved list links to it, its timeline says who resolved it and why');

  step('live refresh of the overview, paused on a hidden tab');
  await go(page, '#/');
  const count = async () => Number(await page.locator(`article[data-flow-step="${FS2}"] a.st-available .n`).innerText());
  const before = await count();
  await api('POST', '/v1/items', { items: [{ flow_step_id: FS2, source_type: 'blog', item_identifier: 'post-live' }] }, 'worker');
  await page.waitForFunction(([fs, n]) => {
    const el = document.querySelector(`article[data-flow-step="${fs}"] a.st-available .n`);
    return el && Number(el.textContent) === n;
  }, [FS2, before + 1], { timeout: 8000 }).then(() => check(true, 'the overview shows a new item within 8 s without a reload'),
    () => check(false, `the overview did not refresh (${before} available)`));
  await page.evaluate(() => { Object.defineProperty(document, 'hidden', { value: true, configurable: true }); });
  const stamp = await page.evaluate(() => document.getElementById('view').dataset.refreshed || '');
  await api('POST', '/v1/items', { items: [{ flow_step_id: FS2, source_type: 'blog', item_identifier: 'post-hidden' }] }, 'worker');
  await sleep(6500);
  check(await page.evaluate(() => document.getElementById('view').dataset.refreshed || '') === stamp && await count() === before + 1,
    'a hidden tab does not refresh');
  await page.evaluate(() => { Object.defineProperty(document, 'hidden', { value: false, configurable: true }); });
  await page.waitForFunction(([fs, n]) => Number(document.querySelector(`article[data-flow-step="${fs}"] a.st-available .n`)?.textContent) === n,
    [FS2, before + 2], { timeout: 8000 }).then(() => check(true, 'it refreshes again once visible'), () => check(false, 'no refresh once visible'));

  step('review loop: request_review over MCP, the answer in the console, the next claim carries it');
  const FS4 = 'review_flow';
  const QUESTION = 'The post quotes a 2019 survey. Is it still fair to cite?';
  const ANSWER = 'Yes, cite it and name the year.';
  const reg = await api('POST', '/v1/items', { items: [{ flow_step_id: FS4, source_type: 'rss', item_identifier: 'survey-post' }] }, 'worker');
  const itemId = reg.items[0].id;
  const first = await claim1(FS4);
  const init = await mcp(first, 'initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'ui-test', version: '1' } }, 1);
  check(init.result && init.result.serverInfo, `MCP initialize (${JSON.stringify(init).slice(0, 120)})`);
  const list = await mcp(first, 'tools/list', {}, 2);
  check(list.result.tools.some((t) => t.name === 'request_review'), 'MCP lists request_review');
  const call = await mcp(first, 'tools/call', { name: 'request_review', arguments: { question: QUESTION } }, 3);
  check(call.result && !call.result.isError, `request_review over MCP (${JSON.stringify(call).slice(0, 200)})`);
  await go(page, '#/review');
  rows = await page.locator('table.review-list tbody tr').allInnerTexts();
  check(rows.some((r) => r.includes(QUESTION) && r.includes('survey-post')), `the review queue shows the question (${JSON.stringify(rows)})`);
  const counts = await page.locator(`table.review-counts tr[data-flow-step="${FS4}"]`).innerText();
  check(/\t1\t1\t\d+ s/.test(counts), `counts per flow step and the oldest question's age (${JSON.stringify(counts)})`);
  await shot(page, '15-review-queue');
  await page.locator(`table.review-list tr[data-item="${itemId}"] a`).first().click();
  await page.locator('#view-title', { hasText: `Item ${itemId}` }).waitFor();
  text = await page.locator('section.review-card').innerText();
  check(text.includes(QUESTION), 'the item shows the model\'s question');
  check((await page.locator('ol.timeline').innerText()).includes('Why: the model asked an editor a question'), 'its timeline says why it waits');
  await page.locator('section.review-card button[data-action="answer-review"]').click();
  await confirm(page, { decision: 'retry', answer: ANSWER });
  rows = await resultRows(page);
  check(rows.length === 1 && /manual review\s*→\s*available/.test(rows[0]) && rows[0].includes('answered by an editor'), `the answer makes it available (${JSON.stringify(rows)})`);
  await shot(page, '16-review-answered');
  const next = await claim1(FS4);
  check(next.review && next.review.question === QUESTION && next.review.answer === ANSWER && next.review.by === 'ops', `the next claim carries the review (${JSON.stringify(next.review)})`);
  const res = await mcp(next, 'resources/read', { uri: 'verdict://job/briefing' }, 4).catch(() => null);
  const briefing = await api('GET', `/v1/jobs/${next.job_id}/briefing`, null, 'reader');
  check(briefing.review && briefing.review.answer === ANSWER && briefing.briefing.startsWith('An editor answered'), `the briefing carries it (${briefing.briefing.slice(0, 80)})`);
  const mcpText = JSON.stringify(res || {});
  check(mcpText.includes(ANSWER), `the MCP briefing resource carries the answer (${mcpText.slice(0, 160)})`);
  await page.close();
}

async function phoneRun() {
  step('phone (390 px)');
  const page = await newPage({ width: 390, height: 844 });
  await signIn(page, 'admin');
  await page.locator(`article[data-flow-step="${FS}"]`).waitFor();
  for (const [hash, name] of [['#/', '9-phone-flow-steps'], [`#/items?flow_step_id=${FS}&order=desc`, '10-phone-items'], [`#/item/${data.retry}`, '11-phone-item'], ['#/activity', '12-phone-activity'],
    ['#/search?q=post-', '17-phone-search'], ['#/review', '18-phone-review'], ['#/incidents', '19-phone-incidents']]) {
    await go(page, hash);
    const w = await page.evaluate(() => document.documentElement.scrollWidth);
    check(w <= 391, `${hash} fits 390 px (scrollWidth ${w})`);
    await shot(page, name);
  }
  await page.close();
}

// Flow control, read-only: limits set on three keys, a live claim holding two of them and a
// site key full, one key backed off after a provider's 429. The overview names the throttled
// key in words, the Limits page lists every key with its settings and live use, a key's page
// explains it, the list redraws itself when another key is backed off, and nobody gets an
// action button (limits are set over the API).
async function limitsRun() {
  step('limits: the overview names a throttled key, the Limits page and a key\'s page');
  const FS5 = 'summarise_en';
  await api('PUT', '/v1/limits/provider:openai', { concurrency: 4, rate: { per: 'minute', count: 60, burst: 10 }, tokens_per_minute: 200000 });
  await api('PUT', '/v1/limits/model:gpt-4o', { tokens_per_minute: 90000 });
  await api('PUT', '/v1/limits/site:blog-3', { concurrency: 1 });
  await api('POST', '/v1/items', { items: [1, 2].map((i) => ({ flow_step_id: FS5, source_type: 'rss', item_identifier: `blog-3/${i}`, limit_keys: ['site:blog-3'] })) }, 'worker');
  const got = await api('POST', '/v1/claims', { flow_step_id: FS5, worker_id: 'bot-2', limit: 2, limit_keys: ['provider:openai', 'model:gpt-4o'], estimated_tokens: 3000 }, 'worker');
  check(got.claims.length === 1, `the site key (concurrency 1) lets one of two items out (${got.claims.length})`);
  const back = await api('POST', '/v1/limits/provider:anthropic/backoff', { retry_after_seconds: 240, reason: '429 Too Many Requests from api.anthropic.com' }, 'worker');
  check(back.limit.throttled, 'the backoff throttles provider:anthropic');

  const page = await newPage({ width: 1280, height: 900 });
  await signIn(page, 'reader');
  const line = page.locator('section.limits-summary p.throttle[data-limit-key="provider:anthropic"]');
  await line.waitFor();
  let text = await line.innerText();
  check(/^Limit key provider:anthropic is throttled for [34] more minutes \(until .+\): 429 Too Many Requests from api\.anthropic\.com\./.test(text),
    `the overview says which key is throttled, for how long and why (${text})`);
  text = await page.locator('section.limits-summary').innerText();
  check(text.includes('1 more limit key is full') && text.includes('site:blog-3'), `the overview names the full key (${text.replace(/\s+/g, ' ')})`);
  await shot(page, '20-overview-throttled');
  await line.locator('a').click();
  await page.locator('#view-title', { hasText: 'Limit provider:anthropic' }).waitFor();
  text = await page.locator('#view').innerText();
  check(text.includes('Claims that need provider:anthropic get nothing now: throttled for') && text.includes('429 Too Many Requests')
    && text.includes('1 in all, 1 in a row'), `a throttled key's page explains it (${text.replace(/\s+/g, ' ').slice(0, 300)})`);
  check(await page.locator('#nav a[aria-current]').innerText() === 'Limits', 'a key\'s page belongs to Limits in the menu');
  await shot(page, '21-limit-throttled');

  await page.locator('#nav a[href="#/limits"]').click();
  await page.locator('#view-title', { hasText: 'Limits' }).waitFor();
  const row = async (key) => (await page.locator(`table.limits tr[data-limit-key="${key}"]`).innerText()).replace(/\s+/g, ' ');
  check(await page.locator('table.limits tbody tr').count() === 4, 'the Limits page lists the four keys');
  text = await row('provider:openai');
  check(text.includes('open') && text.includes('1 of 4 in flight') && /\d+ of 10 claims available now/.test(text) && text.includes('60 per minute, burst 10')
    && /[\d,]+ of 200,000 reserved/.test(text), `a key's settings and live use (${text})`);
  text = await row('site:blog-3');
  check(text.includes('full') && text.includes('full: 1 of 1 in flight'), `a full key says why (${text})`);
  text = await row('provider:anthropic');
  check(text.includes('throttled') && /for [34] more minutes/.test(text), `a throttled key says for how long (${text})`);
  check(await page.locator('[data-action]').count() === 0, 'the Limits page has no action');
  await shot(page, '22-limits');
  await api('POST', '/v1/limits/model:gpt-4o/backoff', { retry_after_seconds: 30, reason: 'overloaded' }, 'worker');
  await page.waitForFunction(() => /throttled/.test(document.querySelector('table.limits tr[data-limit-key="model:gpt-4o"]')?.textContent || ''),
    null, { timeout: 8000 }).then(() => check(true, 'the Limits page shows a new backoff within 8 s without a reload'),
    () => check(false, 'the Limits page did not refresh'));
  await page.locator('table.limits a', { hasText: 'provider:openai' }).click();
  await page.locator('#view-title', { hasText: 'Limit provider:openai' }).waitFor();
  text = await page.locator('section[aria-labelledby="h-now"]').innerText();
  check(text.includes('A claim that needs provider:openai gets an item now.') && text.includes('1 of 4 in flight'), `an open key's page (${text.replace(/\s+/g, ' ')})`);
  await shot(page, '23-limit-open');
  await page.close();

  const phone = await newPage({ width: 390, height: 844 });
  await signIn(phone, 'admin');
  for (const [hash, name] of [['#/limits', '24-phone-limits'], ['#/limit/provider:anthropic', '25-phone-limit']]) {
    await go(phone, hash);
    const w = await phone.evaluate(() => document.documentElement.scrollWidth);
    check(w <= 391, `${hash} fits 390 px (scrollWidth ${w})`);
    check(await phone.locator('[data-action]').count() === 0, `${hash}: no action for an admin either`);
    await shot(phone, name);
  }
  await phone.close();
}

async function headersCheck() {
  step('console headers');
  for (const p of ['/ui/', '/ui/app.js', '/ui/app.css', '/ui/favicon.svg']) {
    const r = await fetch(`${base}${p}`);
    const csp = r.headers.get('content-security-policy') || '';
    check(r.status === 200 && csp.includes("default-src 'self'") && !csp.includes('unsafe-inline'), `${p}: strict CSP (${csp})`);
    check(r.headers.get('x-content-type-options') === 'nosniff', `${p}: nosniff`);
    check(r.headers.get('cache-control') === 'no-cache' && /^"[0-9a-f]{32}"$/.test(r.headers.get('etag') || ''), `${p}: no-cache with an ETag`);
    const again = await fetch(`${base}${p}`, { headers: { 'If-None-Match': r.headers.get('etag') } });
    check(again.status === 304, `${p}: If-None-Match is 304 (got ${again.status})`);
  }
  // The console is ES modules: every module app.js reaches through its imports is a file of
  // ui/ served as JavaScript with the same CSP, and every .js file of ui/ is reached.
  const uiFiles = readdirSync(path.join(ROOT, 'ui'));
  const reached = new Set();
  const todo = ['app.js'];
  while (todo.length) {
    const f = todo.pop();
    if (reached.has(f)) continue;
    reached.add(f);
    check(uiFiles.includes(f), `ui/${f} exists (imported)`);
    const r = await fetch(`${base}/ui/${f}`);
    const csp = r.headers.get('content-security-policy') || '';
    const text = await r.text();
    check(r.status === 200 && r.headers.get('content-type') === 'text/javascript; charset=utf-8' && csp.includes("script-src 'self'")
      && text === readFileSync(path.join(ROOT, 'ui', f), 'utf8'), `/ui/${f}: served as a module (${r.status} ${r.headers.get('content-type')})`);
    for (const m of text.matchAll(/^import\s[^'"]*['"]([^'"]+)['"]/gm)) {
      check(/^\.\/[a-z-]+\.js$/.test(m[1]), `ui/${f} imports ${m[1]} from beside it`);
      todo.push(m[1].slice(2));
    }
  }
  const unreached = uiFiles.filter((f) => f.endsWith('.js') && !reached.has(f));
  check(reached.size >= 10 && unreached.length === 0, `every module of ui/ is imported (${reached.size} reached; not: ${unreached.join(', ')})`);
  const html = readFileSync(path.join(ROOT, 'ui/index.html'), 'utf8');
  check(/<script type="module" src="app.js"><\/script>/.test(html), 'index.html loads app.js as a module');
  check(!/<script>|<style|\sstyle=|\son[a-z]+=/.test(html) && !/https?:\/\//.test(html), 'index.html has no inline script or style and loads nothing from elsewhere');
}

// ------------------------------------------------------------------------------------------

let fatal = null;
try {
  mkdirSync(outDir, { recursive: true });
  await startServer();
  const spec = await (await fetch(`${base}/openapi.json`)).json();
  const releaseLanded = Boolean(spec.paths['/v1/items/{item_id}/release']);
  step(`server at ${base}; making data`);
  await makeData();
  await headersCheck();
  userDataDir = mkdtempSync(path.join(os.tmpdir(), 'verdict-ui-chromium-'));
  // (playwright passes the fresh profile as --user-data-dir)
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM, headless: true, viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  for (const p of browser.pages()) await p.close();
  await adminRun(releaseLanded);
  await readerRun();
  await operatorRun();
  await phoneRun();
  await limitsRun();
} catch (e) {
  fatal = e;
}
if (browser) await browser.close().catch(() => {});
if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
if (server && !serverExit) {
  server.kill('SIGTERM');
  for (let i = 0; i < 200 && !serverExit; i++) await sleep(25);
  if (!serverExit) server.kill('SIGKILL');
}
if (dbCreated) { try { psql(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`); } catch (e) { console.error(e.message); } }
if (fatal) failures.push(`aborted: ${fatal.stack || fatal.message}`);
for (const e of consoleErrors) failures.push(`console: ${e}`);
check(consoleErrors.length === 0, `no console errors (${consoleErrors.length})`);
if (failures.length && existsSync(LOG)) console.log(`verdictd log:\n${readFileSync(LOG, 'utf8').split('\n').slice(-20).join('\n')}`);
rmSync(LOG, { force: true });
for (const f of failures) console.log(`FAIL ${f}`);
console.log(`ui: screenshots in ${outDir}`);
console.log(`ui: ${checks - failedChecks} passed, ${failures.length} failed (${((Date.now() - started) / 1000).toFixed(1)} s)`);
process.exit(failures.length ? 1 : 0);
