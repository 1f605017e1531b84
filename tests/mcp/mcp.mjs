// tests/mcp/mcp.mjs - the MCP endpoint driven by the official MCP TypeScript SDK
// client (@modelcontextprotocol/sdk, its StreamableHTTPClientTransport) against the real
// verdictd and a fresh PostgreSQL database: initialize, list tools (the same schemas as
// /v1/tool-definitions?format=mcp), read the job resource, call each disposition tool on its
// own claim, a refused call, report a tool failure until the loop threshold refuses it, a
// required-tool failure guarding reject_source, a lost claim, and another job's claim refused.
//
//   node tests/mcp/mcp.mjs --verdictd build/verdictd        (tests/mcp/run.sh installs the SDK)
//
// Needs VERDICT_TEST_DATABASE_URL (a libpq keyword string for a superuser; exits 77 without
// it) and psql. Prints one line per check and "N passed, M failed"; exits 1 on any failure.
// Always stops the server and drops its database.
import { spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, unlinkSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

let verdictd = null;
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--verdictd') verdictd = path.resolve(process.argv[++i]);
  else { console.error(`mcp: unknown argument ${process.argv[i]}`); process.exit(2); }
}
if (!verdictd || !existsSync(verdictd)) { console.error('mcp: --verdictd <path> is required'); process.exit(2); }
const DB_BASE = process.env.VERDICT_TEST_DATABASE_URL;
if (!DB_BASE) { console.log('VERDICT_TEST_DATABASE_URL is not set: skipping'); process.exit(77); }

const RUN = `${process.pid}_${Date.now().toString(36)}`;
const DB_NAME = `verdict_mcp_${RUN}`;
const LOG_PATH = path.join(os.tmpdir(), `verdict-mcp-${RUN}.log`);
const WORKER = `wk-${randomUUID()}`;
const READER = `rd-${randomUUID()}`;
const FLOW = 'mcp_flow';
let server = null;
let serverExit = null;
let dbCreated = false;
let base = '';
let passed = 0;
const failures = [];

function check(cond, what, detail = '') {
  if (cond) passed++;
  else failures.push(`${what}${detail ? `: ${detail}` : ''}`);
  console.log(`${cond ? 'ok  ' : 'FAIL'} ${what}${!cond && detail ? ` (${detail})` : ''}`);
  return !!cond;
}
const snip = (v) => { const t = typeof v === 'string' ? v : JSON.stringify(v); return t && t.length > 300 ? `${t.slice(0, 300)}…` : t; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function psql(sql, db = DB_BASE) {
  const r = spawnSync('psql', ['-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-d', db, '-c', sql],
    { encoding: 'utf8', timeout: 60000 });
  if (r.status !== 0) throw new Error(`psql -c "${sql}": ${r.stderr || r.error}`);
  return r.stdout.trim();
}
const sqlIn = (sql) => psql(sql, `${DB_BASE} dbname=${DB_NAME}`);

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

async function startServer() {
  psql(`CREATE DATABASE ${DB_NAME}`);
  dbCreated = true;
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const log = openSync(LOG_PATH, 'w');
  server = spawn(verdictd, ['serve'], {
    stdio: ['ignore', log, log],
    env: {
      ...process.env,
      VERDICT_DATABASE_URL: `${DB_BASE} dbname=${DB_NAME}`,
      VERDICT_LISTEN: `127.0.0.1:${port}`,
      VERDICT_API_KEYS: `bot:worker:${WORKER},dash:reader:${READER}`,
      VERDICT_THREADS: '2',
      VERDICT_LOG_LEVEL: 'warn',
      VERDICT_LOOP_THRESHOLD: '3',
      VERDICT_SWEEP_INTERVAL_SECONDS: '1',
    },
  });
  closeSync(log);
  server.on('exit', (code, signal) => { serverExit = { code, signal }; });
  for (let i = 0; i < 600 && !serverExit; i++) {
    try { if ((await fetch(`${base}/readyz`)).status === 200) return; } catch { /* not yet */ }
    await sleep(50);
  }
  throw new Error(`verdictd did not become ready (see ${LOG_PATH})`);
}

async function stopServer() {
  if (server && !serverExit) {
    server.kill('SIGTERM');
    for (let i = 0; i < 200 && !serverExit; i++) await sleep(25);
    check(serverExit && serverExit.code === 0, 'verdictd exits 0 on SIGTERM', JSON.stringify(serverExit));
    if (!serverExit) server.kill('SIGKILL');
  }
  if (dbCreated) {
    dbCreated = false;
    try { psql(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`); } catch (e) { console.error(`mcp: ${e.message}`); }
  }
}
process.on('exit', () => { if (server && !serverExit) server.kill('SIGKILL'); });

async function api(method, p, body, token = WORKER) {
  const r = await fetch(`${base}${p}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, body: await r.json() };
}

let nextItem = 0;
// A fresh item and its claim: {job_id, claim_token, item}.
async function freshClaim() {
  const ident = `item-${nextItem++}`;
  const reg = await api('POST', '/v1/items', { items: [{ flow_step_id: FLOW, source_type: 'rss', item_identifier: ident, payload: { title: `about ${ident}` } }] });
  if (reg.status !== 200) throw new Error(`register: ${snip(reg.body)}`);
  const c = await api('POST', '/v1/claims', { flow_step_id: FLOW, worker_id: 'mcp-test', limit: 1 });
  if (c.status !== 200 || c.body.claims.length !== 1) throw new Error(`claim: ${snip(c.body)}`);
  return c.body.claims[0];
}

// An SDK client whose session is bound to one claim by the two headers.
async function connect(claimHeader, token = WORKER) {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}`, ...(claimHeader ? { 'Verdict-Claim': claimHeader } : {}) } },
  });
  const client = new Client({ name: 'verdict-mcp-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}
const claimOf = (c) => `${c.job_id}:${c.claim_token}`;
const itemState = async (id) => (await api('GET', `/v1/items/${id}`, null, READER)).body.item.state;

async function handshakeAndLists() {
  const c = await freshClaim();
  const { client, transport } = await connect(claimOf(c));
  check(client.getServerVersion()?.name === 'verdict', 'initialize: serverInfo.name is verdict', snip(client.getServerVersion()));
  check(transport.protocolVersion === '2025-11-25', 'initialize: the SDK\'s newest protocol version is negotiated', transport.protocolVersion);
  check(transport.sessionId === undefined, 'initialize: stateless, no Mcp-Session-Id', transport.sessionId);
  check((client.getInstructions() || '').includes(`job ${c.job_id}`), 'initialize: instructions name the bound job');
  const caps = client.getServerCapabilities();
  check(caps?.tools && caps?.resources, 'initialize: tools and resources capabilities', snip(caps));

  const tools = (await client.listTools()).tools;
  const names = tools.map((t) => t.name);
  check(isDeepStrictEqual(names, ['complete_item', 'reject_source', 'defer_item', 'fail_item', 'request_review', 'report_tool_failure']),
    'tools/list: the four dispositions and report_tool_failure', names.join(','));
  const defs = (await api('GET', '/v1/tool-definitions?format=mcp', null, READER)).body.tools;
  for (const d of defs) {
    const t = tools.find((x) => x.name === d.name);
    check(t && isDeepStrictEqual(t.inputSchema, d.inputSchema) && t.description === d.description,
      `tools/list: ${d.name} is the same as /v1/tool-definitions?format=mcp`);
  }
  const rtf = tools.find((t) => t.name === 'report_tool_failure');
  check(rtf && isDeepStrictEqual(Object.keys(rtf.inputSchema.properties).sort(), ['args', 'error', 'limit_key', 'required', 'retry_after_seconds', 'tool']),
    'tools/list: report_tool_failure takes tool, args, error, required, limit_key, retry_after_seconds', snip(rtf?.inputSchema));

  const res = (await client.listResources()).resources;
  check(res.length === 2 && res[0].uri === 'verdict://job' && res[1].uri === 'verdict://job/briefing',
    'resources/list: verdict://job and verdict://job/briefing', snip(res));
  const brief = await client.readResource({ uri: 'verdict://job/briefing' });
  check(brief.contents[0].mimeType === 'text/plain' && /^Attempt 1\. No earlier attempts\.$/.test(brief.contents[0].text),
    'resources/read: the briefing of a first attempt', snip(brief));
  const read = await client.readResource({ uri: 'verdict://job' });
  const doc = JSON.parse(read.contents[0].text);
  check(doc.job.id === c.job_id && doc.item.id === c.item.id && doc.item.payload.title === c.item.payload.title &&
    doc.item.state === 'claimed' && doc.job.status === 'processing', 'resources/read: the job, its item and payload', snip(doc));
  check(!JSON.stringify(doc).includes(c.claim_token), 'resources/read: the claim token is not shown to the model');
  let err = null;
  try { await client.readResource({ uri: 'verdict://other' }); } catch (e) { err = e; }
  check(err && err.code === -32002, 'resources/read: an unknown URI is -32002', err?.message);
  err = null;
  try { await client.callTool({ name: 'skip_item', arguments: {} }); } catch (e) { err = e; }
  check(err && err.code === -32602, 'tools/call: an unknown tool is -32602', err?.message);
  check(isDeepStrictEqual(await client.ping(), {}), 'ping answers {}');
  await client.close();
}

// Each disposition tool on its own fresh claim: the item moves as the HTTP call would move it.
async function dispositions() {
  const cases = [
    ['complete_item', {}, 'processed', 'completed'],
    ['reject_source', { reason_code: 'spam', reason: 'a link farm' }, 'rejected', 'rejected'],
    ['defer_item', { reason_code: 'tool_error', reason: 'the quality gate failed', retry_after_seconds: 60 }, 'deferred', 'deferred'],
    ['fail_item', { error: 'the upsert tool returned 500', retryable: false }, 'failed', 'failed'],
  ];
  for (const [name, args, state, status] of cases) {
    const c = await freshClaim();
    const { client } = await connect(claimOf(c));
    const r = await client.callTool({ name, arguments: args });
    check(r.isError === false && r.structuredContent?.item?.state === state && r.structuredContent?.job?.status === status,
      `tools/call ${name}: item ${state}, job ${status}`, snip(r));
    check(typeof r.content?.[0]?.text === 'string' && r.content[0].text.length > 10 && !r.content[0].text.includes(c.claim_token),
      `tools/call ${name}: a model-facing text without the token`, r.content?.[0]?.text);
    check(r.content[0].text === r.structuredContent?.tool_result?.text && r.structuredContent?.tool_result?.terminal === true,
      `tools/call ${name}: the text is the answer's tool_result.text`, r.content?.[0]?.text);
    check(await itemState(c.item.id) === state, `tools/call ${name}: GET /v1/items shows ${state}`);
    const again = await client.callTool({ name, arguments: args });
    check(again.isError === false && again.structuredContent?.replayed === true, `tools/call ${name}: the identical call replays`, snip(again.structuredContent));
    const other = await client.callTool({ name: name === 'complete_item' ? 'fail_item' : 'complete_item', arguments: name === 'complete_item' ? { error: 'x' } : {} });
    check(other.isError === true && other.structuredContent?.error === 'job_finalized' && other.structuredContent?.retryable === false &&
      typeof other.structuredContent?.hint === 'string', `tools/call after ${name}: another disposition is job_finalized (isError)`, snip(other.structuredContent));
    await client.close();
  }
  // a refused call: isError with the field named, and the claim still open
  const c = await freshClaim();
  const { client } = await connect(claimOf(c));
  const bad = await client.callTool({ name: 'reject_source', arguments: { reason_code: 'boring' } });
  check(bad.isError === true && bad.structuredContent?.error === 'invalid_field' && bad.structuredContent?.field === 'reason_code' &&
    bad.structuredContent?.retryable === false, 'tools/call reject_source with an unknown reason_code: invalid_field (isError)', snip(bad.structuredContent));
  const forced = await client.callTool({ name: 'complete_item', arguments: { force: true, claim_token: '00000000-0000-4000-8000-000000000000' } });
  check(forced.isError === false && forced.structuredContent?.item?.state === 'processed',
    'tools/call: arguments outside the schema (force, claim_token) are ignored', snip(forced.structuredContent));
  await client.close();
}

// report_tool_failure: the §6 envelope; the third identical transient failure is refused.
async function toolFailures() {
  const c = await freshClaim();
  const { client } = await connect(claimOf(c));
  const args = { tool: 'web_fetch', args: { url: 'https://ex.org/a' }, error: 'upstream timeout after 30 s' };
  for (let n = 1; n <= 3; n++) {
    const r = await client.callTool({ name: 'report_tool_failure', arguments: args });
    const env = r.structuredContent || {};
    const want = n < 3;
    check(env.repeat_count === n && env.retryable === want && env.kind === 'transient' && env.tool === 'web_fetch' &&
      env.error === args.error && r.isError === !want, `report_tool_failure #${n}: repeat_count ${n}, retryable ${want}, isError ${!want}`, snip(r));
    check(r.content[0].text === env.tool_result?.text && env.tool_result?.terminal === false,
      `report_tool_failure #${n}: the text is the envelope's tool_result.text`, r.content[0].text);
    if (n === 3) check(/Stop calling 'web_fetch'/.test(env.hint) && /defer_item/.test(env.hint), 'report_tool_failure #3: the hint says stop and defer', env.hint);
  }
  const req = await client.callTool({ name: 'report_tool_failure', arguments: { tool: 'wiki_upsert', error: 'schema mismatch', required: true } });
  check(req.isError === true && req.structuredContent?.kind === 'deterministic', 'report_tool_failure required, deterministic: refused from the first', snip(req.structuredContent));
  const listed = (await client.listTools()).tools.map((t) => t.name);
  check(isDeepStrictEqual(listed, ['defer_item', 'fail_item', 'request_review', 'report_tool_failure']),
    'tools/list after a required tool failed deterministically: no reject_source, no complete_item', listed.join(','));
  const rej = await client.callTool({ name: 'reject_source', arguments: { reason_code: 'too_thin' } });
  check(rej.isError === true && rej.structuredContent?.error === 'tool_failure_pending', 'reject_source after a required tool failed: tool_failure_pending (isError)', snip(rej.structuredContent));
  const def = await client.callTool({ name: 'defer_item', arguments: { reason_code: 'tool_error' } });
  check(def.isError === false && def.structuredContent?.item?.state === 'deferred', 'defer_item after it: deferred');
  const after = (await client.listTools()).tools;
  check(after.length === 0, 'tools/list of a finished claim: no tools', after.map((t) => t.name).join(','));
  const job = (await api('GET', `/v1/jobs/${c.job_id}`, null, READER)).body.job;
  check(job.tool_failures.count === 4, 'the job records the four tool failures', snip(job.tool_failures));
  await client.close();
}

// The claim is the session's: another job's token is refused at the transport, a lost claim
// answers tool calls with claim_lost.
async function claims() {
  const a = await freshClaim();
  const b = await freshClaim();
  let err = null;
  try { await connect(`${a.job_id}:${b.claim_token}`); } catch (e) { err = e; }
  check(err && err.code === 403, 'another job\'s claim token: initialize refused with 403', err?.message);
  err = null;
  try { await connect(null); } catch (e) { err = e; }
  check(err && err.code === 400, 'no Verdict-Claim header: refused with 400', err?.message);
  err = null;
  try { await connect(claimOf(a), READER); } catch (e) { err = e; }
  check(err && err.code === 403, 'a reader key: refused with 403', err?.message);
  err = null;
  try { await connect(claimOf(a), 'not-a-key'); } catch (e) { err = e; }
  check(err && err.code === 401, 'an unknown key: refused with 401', err?.message);

  // a lost claim: the lease passes, the sweeper expires the job and the item is claimed again
  const { client } = await connect(claimOf(a));
  sqlIn(`UPDATE items SET lease_expires_at = now() - interval '1 second' WHERE id = ${a.item.id};
         UPDATE jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ${a.job_id}`);
  let status = '';
  for (let i = 0; i < 100 && status !== 'expired'; i++) {
    status = (await api('GET', `/v1/jobs/${a.job_id}`, null, READER)).body.job.status;
    if (status !== 'expired') await sleep(100);
  }
  check(status === 'expired', 'the sweeper expired the job within 10 s', status);
  const r = await client.callTool({ name: 'complete_item', arguments: {} });
  check(r.isError === true && r.structuredContent?.error === 'claim_lost' && r.structuredContent?.retryable === false,
    'a lost claim: complete_item answers claim_lost (isError)', snip(r.structuredContent));
  const f = await client.callTool({ name: 'report_tool_failure', arguments: { tool: 't', error: 'e' } });
  check(f.isError === true && f.structuredContent?.error === 'claim_lost', 'a lost claim: report_tool_failure answers claim_lost');
  check(await itemState(a.item.id) !== 'processed', 'a lost claim changed nothing');
  await client.close();
  // b is untouched by a's session
  check(await itemState(b.item.id) === 'claimed', 'the other job\'s item is untouched');
}

try {
  await startServer();
  for (const [name, fn] of [['handshake', handshakeAndLists], ['dispositions', dispositions], ['tool failures', toolFailures], ['claims', claims]]) {
    try { await fn(); } catch (e) { check(false, `${name}: aborted`, e.stack || e.message); }
    if (serverExit) { check(false, `verdictd died during ${name}`, JSON.stringify(serverExit)); break; }
  }
} catch (e) {
  check(false, 'setup', e.stack || e.message);
}
await stopServer();
if (failures.length && existsSync(LOG_PATH)) {
  console.log(`verdictd log (${LOG_PATH}):\n${readFileSync(LOG_PATH, 'utf8').split('\n').slice(-30).join('\n')}`);
} else if (existsSync(LOG_PATH)) {
  unlinkSync(LOG_PATH);
}
for (const f of failures) console.log(`  - ${f}`);
console.log(`mcp: ${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
