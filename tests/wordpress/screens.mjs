// tests/wordpress/screens.mjs PHASE - the verdict-pipeline plugin's screens in a real browser:
// Debian's chromium (headless, through playwright-core from tests/ui; no browser is downloaded)
// against the WordPress that tests/wordpress/e2e.sh serves with `php -S`. Each phase signs in
// (the profile in E2E_CHROME_PROFILE keeps the session between phases), walks its screens,
// saves a full-page screenshot of each in E2E_SHOTS, and fails on any console error, page
// error or failed request. Phases:
//   install  Plugins -> Add New -> Upload Plugin with the zip (E2E_ZIP), then Activate
//   down     verdict is down and a registration has waited 20 minutes: Tools -> verdict shows
//            the outbox, Site Health warns
//   main     Send now; every state view and its count; search; the log column; a bulk requeue
//            with its confirmation; resolve and release row actions; Settings (reprocess on
//            update turned on); Posts -> Reprocess in verdict; Site Health -> Info; a model's
//            question (request_review over HTTP) answered "retry" in Tools -> verdict, and the
//            next claim carrying the answer
// Environment: E2E_WP_URL, E2E_PASS, E2E_VERDICT_URL, E2E_KEY, E2E_FLOW, E2E_SHOTS,
// E2E_CHROME_PROFILE, E2E_ZIP. Exits 1 on failure.
/* global document, window -- the page.evaluate and waitForFunction callbacks run in the page */
import { createRequire } from 'node:module';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const UI = path.resolve(HERE, '../ui');
const { chromium } = createRequire(path.join(UI, 'package.json'))('playwright-core');
const phase = process.argv[2];
const env = (k) => { const v = process.env[k]; if (!v) { console.error(`screens: ${k} is not set`); process.exit(2); } return v; };
const WP = env('E2E_WP_URL');
const SHOTS = env('E2E_SHOTS');
mkdirSync(SHOTS, { recursive: true });
const CHROMIUM = process.env.VERDICT_CHROMIUM || '/usr/bin/chromium';
if (!existsSync(CHROMIUM)) { console.error(`screens: no browser at ${CHROMIUM}`); process.exit(1); }

const failures = [];
const problems = [];
function check(cond, what) {
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${phase}: ${what}`);
  if (!cond) failures.push(what);
  return !!cond;
}
async function api(method, p, body) {
  const r = await fetch(env('E2E_VERDICT_URL') + p, { method, headers: { Authorization: `Bearer ${env('E2E_KEY')}`, 'Content-Type': 'application/json' },
    body: body ? JSON.stringify(body) : undefined });
  if (r.status !== 200) throw new Error(`${method} ${p}: ${r.status} ${await r.text()}`);
  return r.json();
}
async function itemOf(identifier) {
  const out = await api('POST', '/v1/items/lookup', { flow_step_id: env('E2E_FLOW'), source_type: 'wp_post', item_identifiers: [identifier] });
  return out.items[0];
}

let n = 0;
async function shot(page, name) {
  n++;
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(SHOTS, `${phase}-${String(n).padStart(2, '0')}-${name}.png`), fullPage: true });
}
const tools = (q = '') => `${WP}/wp-admin/tools.php?page=verdict-pipeline${q}`;
async function go(page, url) {
  const r = await page.goto(url, { waitUntil: 'load' });
  check(r && r.status() === 200, `GET ${url.replace(WP, '')} is 200 (${r && r.status()})`);
}
async function signIn(page) {
  await page.goto(`${WP}/wp-login.php`);
  if (await page.locator('#user_login').count()) {
    await page.locator('#user_login').fill('admin');
    await page.locator('#user_pass').fill(env('E2E_PASS'));
    await Promise.all([page.waitForNavigation(), page.locator('#wp-submit').click()]);
  }
  await go(page, `${WP}/wp-admin/`);
  check(await page.locator('#wpadminbar').count() === 1, 'signed in as admin');
}
const text = async (page, sel) => (await page.locator(sel).first().innerText()).trim();
const viewCount = async (page, state) => Number((await text(page, `ul.subsubsub a[data-state="${state}"] .count`)).replace(/[()]/g, ''));
const notice = async (page) => (await page.locator('.verdict-notice').count()) ? text(page, '.verdict-notice') : '';

async function phaseInstall(page) {
  await go(page, `${WP}/wp-admin/plugin-install.php?tab=upload`);
  await page.locator('#pluginzip').setInputFiles(env('E2E_ZIP'));
  await shot(page, 'upload-form');
  await Promise.all([page.waitForNavigation(), page.locator('#install-plugin-submit').click()]);
  const body = await page.locator('#wpbody-content').innerText();
  check(/Plugin installed successfully/.test(body), 'the uploaded zip installed');
  await shot(page, 'installed');
  await Promise.all([page.waitForNavigation(), page.locator('a:has-text("Activate Plugin")').click()]);
  check(await page.locator('tr[data-slug="verdict-pipeline"].active').count() === 1, 'the plugin is active on the Plugins screen');
  await shot(page, 'plugins');
}

async function phaseDown(page) {
  await go(page, tools());
  const box = await text(page, '.verdict-outbox');
  check(/1 registration waits/.test(box) && /Last error:/.test(box), `the outbox shows 1 waiting and the last error (${box.slice(0, 120)})`);
  check(await page.locator('.notice-error').count() >= 1, 'verdict being down is an error notice, not a broken page');
  await shot(page, 'tools-verdict-down');
  await go(page, `${WP}/wp-admin/site-health.php`);
  await page.locator('.site-health-issues-wrapper, #health-check-issues-recommended').first().waitFor();
  await page.waitForFunction(() => !document.querySelector('.site-health-progress-wrapper.loading'), null, { timeout: 30000 });
  const issues = await page.locator('#health-check-issues-recommended, #health-check-issues-critical').allInnerTexts();
  check(issues.join(' ').includes('more than 15 minutes'), 'Site Health warns about the outbox older than 15 minutes');
  await shot(page, 'site-health-status');
}

async function phaseMain(page) {
  // the outbox: Send now
  await go(page, tools());
  await Promise.all([page.waitForNavigation(), page.locator('#verdict-flush').click()]);
  check(/1 sent, 0 waiting/.test(await notice(page)), `Send now emptied the outbox (${await notice(page)})`);
  check(/empty/.test(await text(page, '.verdict-outbox')), 'the outbox box says empty');
  check(!/Oldest claimable: - s/.test(await page.content()), 'no "Oldest claimable: - s."');
  await shot(page, 'tools-all');

  // every state view: its count is its rows
  const stats = (await api('GET', `/v1/stats?flow_step_id=${env('E2E_FLOW')}`)).flow_steps[0].items;
  for (const state of ['available', 'claimed', 'processed', 'rejected', 'deferred', 'manual_review', 'failed']) {
    await go(page, tools(`&item_state=${state}`));
    const count = await viewCount(page, state);
    const rows = await page.locator('table.wp-list-table tbody tr:not(.no-items)').count();
    check(count === (stats[state] ?? 0) && rows === count, `view ${state}: count ${count}, ${rows} rows, verdict says ${stats[state] ?? 0}`);
    check(await page.locator(`ul.subsubsub a.current[data-state="${state}"]`).count() === 1, `view ${state} is the current one`);
    await shot(page, `view-${state}`);
  }

  // paging: Screen Options -> 5 items per page, then First / Next page through all of them
  await go(page, tools());
  await page.locator('#show-settings-link').click();
  await page.locator('#verdict_pipeline_per_page, input[name="wp_screen_options[value]"]').first().fill('5');
  await Promise.all([page.waitForNavigation(), page.locator('#screen-options-apply').click()]);
  const total = Number((await text(page, 'ul.subsubsub li.all .count')).replace(/[()]/g, ''));
  const seen = [];
  for (let p = 1; ; p++) {
    const ids = await page.locator('table.wp-list-table tbody tr th.check-column input').evaluateAll((els) => els.map((e) => Number(e.value)));
    check(ids.length === Math.min(5, total - seen.length), `page ${p} shows ${ids.length} items`);
    seen.push(...ids);
    if (p === 2) await shot(page, 'paging');
    if (await page.locator('.tablenav.top a.next-page').count() === 0) break;
    await Promise.all([page.waitForNavigation(), page.locator('.tablenav.top a.next-page').click()]);
  }
  check(seen.length === total && new Set(seen).size === total && seen.every((id, i) => i === 0 || id < seen[i - 1]),
    `the pages hold all ${total} items once each, newest first`);
  await page.locator('#show-settings-link').click();
  await page.locator('input[name="wp_screen_options[value]"]').fill('20');
  await Promise.all([page.waitForNavigation(), page.locator('#screen-options-apply').click()]);

  // search by identifier, and the log column
  const review = await itemOf(process.env.E2E_REVIEW_POST);
  await go(page, tools(`&s=${encodeURIComponent(process.env.E2E_REVIEW_POST)}`));
  const found = await page.locator('table.wp-list-table tbody tr').allInnerTexts();
  check(found.length === 1 && found[0].includes(`#${review.id}`), `search ${process.env.E2E_REVIEW_POST} finds item #${review.id}`);
  await page.locator('details.verdict-log summary').first().click();
  const log = await text(page, 'details.verdict-log[open] ol');
  check(/defer/.test(log) && /register/.test(log), `the log column unfolds the transitions (${log.split('\n').length} lines)`);
  const href = await page.locator('table.wp-list-table tbody tr a[target="_blank"]').first().getAttribute('href');
  check(href === `${env('E2E_VERDICT_URL')}/ui/#/item/${review.id}`, `the item links to verdict's console (${href})`);
  await shot(page, 'search-and-log');

  // resolve (row action, reason required) on the manual_review item
  await go(page, tools('&item_state=manual_review'));
  await page.locator('table.wp-list-table tbody tr').first().hover();
  await Promise.all([page.waitForNavigation(), page.locator('a.verdict-resolve-processed').first().click()]);
  check(await page.locator('#verdict-reason[required]').count() === 1, 'resolve asks for a required reason on its confirmation screen');
  await page.locator('#verdict-reason').fill('checked by an editor');
  await shot(page, 'confirm-resolve');
  await Promise.all([page.waitForNavigation(), page.locator('#verdict-confirm').click()]);
  check(new RegExp(`#${review.id} processed`).test(await notice(page)), `resolved #${review.id} (${await notice(page)})`);
  check((await api('GET', `/v1/items/${review.id}`)).item.state === 'processed', 'verdict has the item processed');

  // resolve as rejected on the failed item
  await go(page, tools('&item_state=failed'));
  await page.locator('table.wp-list-table tbody tr').first().hover();
  await Promise.all([page.waitForNavigation(), page.locator('a.verdict-resolve-rejected').first().click()]);
  await page.locator('#verdict-reason').fill('the page is gone for good');
  await Promise.all([page.waitForNavigation(), page.locator('#verdict-confirm').click()]);
  check(/ rejected/.test(await notice(page)) && await viewCount(page, 'failed') === 0, `resolved the failed item as rejected (${await notice(page)})`);

  // release (row action) on the claimed item
  await go(page, tools('&item_state=claimed'));
  check(await page.locator('a.verdict-requeue').count() === 0, 'a claimed item offers no requeue');
  await page.locator('table.wp-list-table tbody tr').first().hover();
  await Promise.all([page.waitForNavigation(), page.locator('a.verdict-release').first().click()]);
  await Promise.all([page.waitForNavigation(), page.locator('#verdict-confirm').click()]);
  check(/available/.test(await notice(page)), `released the claim (${await notice(page)})`);
  await shot(page, 'released');

  // bulk requeue of every deferred item, after its confirmation
  await go(page, tools('&item_state=deferred'));
  const deferred = await viewCount(page, 'deferred');
  await page.locator('#cb-select-all-1').check();
  await page.locator('#bulk-action-selector-top').selectOption('requeue');
  await Promise.all([page.waitForNavigation(), page.locator('#doaction').click()]);
  check(new RegExp(`Requeue ${deferred} items\\?`).test(await text(page, '.verdict-confirm h2')), `bulk requeue asks to confirm ${deferred} items`);
  await shot(page, 'confirm-bulk');
  await Promise.all([page.waitForNavigation(), page.locator('#verdict-confirm').click()]);
  check((await notice(page)).split('available').length - 1 === deferred, `bulk requeued ${deferred} items (${await notice(page)})`);
  check(await viewCount(page, 'deferred') === 0, 'no deferred items are left');
  await shot(page, 'after-bulk');

  // Settings: reprocess on update (off by default) turned on
  await go(page, `${WP}/wp-admin/options-general.php?page=verdict-pipeline-settings`);
  check(!(await page.locator('#verdict-reprocess-on-update').isChecked()), 'reprocess on update is off by default');
  await page.locator('#verdict-reprocess-on-update').check();
  await Promise.all([page.waitForNavigation(), page.locator('#submit').click()]);
  check(await page.locator('#verdict-reprocess-on-update').isChecked(), 'reprocess on update saved');
  await shot(page, 'settings');

  // Posts: Reprocess in verdict (the rejected spam post)
  const spam = process.env.E2E_SPAM_POST;
  await go(page, `${WP}/wp-admin/edit.php`);
  const row = page.locator(`#post-${spam.replace('post-', '')}`);
  await row.hover();
  await Promise.all([page.waitForNavigation(), row.locator('a.verdict-reprocess').click()]);
  check(/requeued/.test(await notice(page)), `Reprocess in verdict (${await notice(page)})`);
  check((await itemOf(spam)).state === 'available', `${spam} is available again in verdict`);
  await shot(page, 'posts-reprocess');

  // Site Health -> Info: the verdict section
  await go(page, `${WP}/wp-admin/site-health.php?tab=debug`);
  const section = page.locator('#health-check-accordion-block-verdict-pipeline');
  await page.locator('button[aria-controls="health-check-accordion-block-verdict-pipeline"]').click();
  const info = await section.innerText();
  check(/Base URL/.test(info) && /Key role\s+admin/.test(info) && /Flow step/.test(info) && /Outbox\s+empty/.test(info) && /Last cron run/.test(info),
    'Site Health -> Info has the verdict section');
  await shot(page, 'site-health-info');

  await reviewLoop(page);
}

// a model parks an item with a question (request_review over verdict's HTTP API); the editor
// sees it in Tools -> verdict (the Questions view, the question in the row), answers "retry"
// through the Answer row action and its confirmation form; the next claim carries the answer
async function reviewLoop(page) {
  const QUESTION = 'May I quote the 2019 figures from the source?';
  const ANSWER = 'Yes: quote them and name the source.';
  const ident = `review-e2e-${Date.now()}`;
  const reg = await api('POST', '/v1/items', { items: [{ flow_step_id: env('E2E_FLOW'), source_type: 'wp_post', item_identifier: ident }] });
  const id = reg.items[0].id;
  const claimAll = async () => (await api('POST', '/v1/claims', { flow_step_id: env('E2E_FLOW'), worker_id: 'e2e@review', limit: 100 })).claims;
  const releaseOthers = async (claims) => {
    for (const c of claims.filter((x) => x.item.id !== id)) await api('POST', `/v1/jobs/${c.job_id}/release`, { claim_token: c.claim_token });
  };
  let claims = await claimAll();
  const mine = claims.find((c) => c.item.id === id);
  await releaseOthers(claims);
  check(!!mine, `claimed the new item #${id}`);
  const parked = await api('POST', `/v1/jobs/${mine.job_id}/disposition`, { claim_token: mine.claim_token, disposition: 'request_review', question: QUESTION });
  check(parked.item.state === 'manual_review', `request_review parked #${id} (${parked.item.state})`);

  await go(page, tools('&item_state=manual_review'));
  check(Number((await text(page, 'ul.subsubsub a[data-state="questions"] .count')).replace(/[()]/g, '')) === 1, 'the Questions view counts 1');
  const row = page.locator('table.wp-list-table tbody tr', { hasText: ident });
  check((await row.locator('.verdict-question').innerText()).includes(QUESTION), 'the row shows the model\'s question');
  await shot(page, 'question-row');
  await row.hover();
  await Promise.all([page.waitForNavigation(), row.locator('a.verdict-answer').click()]);
  check((await text(page, '.verdict-confirm .verdict-question')).includes(QUESTION), 'the answer form shows the question');
  check(await page.locator('#verdict-decision option').count() === 3, 'the answer form offers retry, processed, rejected');
  await page.locator('#verdict-decision').selectOption('retry');
  await page.locator('#verdict-answer').fill(ANSWER);
  await shot(page, 'answer-form');
  await Promise.all([page.waitForNavigation(), page.locator('#verdict-confirm').click()]);
  check(new RegExp(`#${id} available`).test(await notice(page)), `answered #${id}: it is available (${await notice(page)})`);
  check(await page.locator('ul.subsubsub a[data-state="questions"]').count() === 0, 'no Questions view once answered');
  await shot(page, 'answered');

  claims = await claimAll();
  const next = claims.find((c) => c.item.id === id);
  await releaseOthers(claims);
  check(next && next.review && next.review.question === QUESTION && next.review.answer === ANSWER,
    `the next claim of #${id} carries the review (${JSON.stringify(next && next.review)})`);
  if (next) await api('POST', `/v1/jobs/${next.job_id}/release`, { claim_token: next.claim_token });
}

const browser = await chromium.launchPersistentContext(env('E2E_CHROME_PROFILE'), {
  executablePath: CHROMIUM, headless: true, viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = browser.pages()[0] || await browser.newPage();
  page.setDefaultTimeout(20000);
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console error: ${m.text()} (${page.url()})`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message} (${page.url()})`));
  // a request the next navigation aborted (net::ERR_ABORTED) is no fault of the page
  page.on('requestfailed', (r) => { if (r.failure()?.errorText !== 'net::ERR_ABORTED') problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`); });
  await signIn(page);
  if (phase === 'install') await phaseInstall(page);
  else if (phase === 'down') await phaseDown(page);
  else if (phase === 'main') await phaseMain(page);
  else throw new Error(`unknown phase ${phase}`);
} catch (e) {
  failures.push(`${e.message}`);
  console.log(`FAIL ${phase}: ${e.stack}`);
} finally {
  await browser.close();
}
check(problems.length === 0, `no console errors (${problems.length})`);
for (const p of problems) console.log(`  ${p}`);
console.log(`screens ${phase}: ${n} screenshots in ${SHOTS}, ${failures.length} failures`);
process.exit(failures.length ? 1 : 0);
