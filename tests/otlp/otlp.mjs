// tests/otlp/otlp.mjs - verdictd's OTLP/HTTP JSON span export (VERDICT_OTLP_ENDPOINT) against
// a real receiver: a node HTTP server taking POST /v1/traces, each span checked against the
// shape the official OpenTelemetry JS SDK exports (@opentelemetry/sdk-trace spans serialised
// by @opentelemetry/otlp-transformer's JsonTraceSerializer: every member verdict sends must
// exist there with the same JSON type), and against the spans documented in
// docs/decisions/0063-otlp-export.md: one SERVER span per request, the caller's trace id and
// parent span, messaging.operation.type send/receive/settle, error.type on a refusal.
// Then a receiver that accepts and never answers: requests stay fast and the spans the full
// queue cannot hold are counted as dropped (verdict_otlp_spans_total).
//
//   node tests/otlp/otlp.mjs --verdictd build/verdictd
//
// Needs VERDICT_TEST_DATABASE_URL (exit 77 without it), psql and tests/otlp/node_modules
// (npm ci here when missing). Exit 1 on failure.
import { createRequire } from 'node:module';
import { existsSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID, randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
let verdictd = null;
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--verdictd') verdictd = path.resolve(process.argv[++i]);
}
if (!verdictd || !existsSync(verdictd)) { console.error('otlp: --verdictd <binary> is required'); process.exit(2); }
const DB_BASE = process.env.VERDICT_TEST_DATABASE_URL;
if (!DB_BASE) { console.log('VERDICT_TEST_DATABASE_URL is not set: skipping'); process.exit(77); }
if (!existsSync(path.join(HERE, 'node_modules/@opentelemetry/otlp-transformer'))) {
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: HERE, stdio: 'inherit' });
  if (r.status !== 0) { console.error('otlp: npm ci in tests/otlp failed'); process.exit(1); }
}
const require = createRequire(path.join(HERE, 'package.json'));
const { JsonTraceSerializer } = require('@opentelemetry/otlp-transformer');
const { TracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace');
const api = require('@opentelemetry/api');

let failed = 0;
let passed = 0;
const check = (cond, what) => { if (cond) passed++; else { failed++; console.log(`  FAIL ${what}`); } return !!cond; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const RUN = `${process.pid}_${Date.now().toString(36)}`;
const DB = `verdict_otlp_${RUN}`;
const TOKEN = `ad-${randomUUID()}`;
const psql = (sql) => {
  const r = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', DB_BASE, '-c', sql], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
};
const freePort = () => new Promise((done) => { const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => done(p)); }); });

// The reference: SERVER spans made and exported by the official SDK, as OTLP JSON (one with a
// remote parent, as verdict's are when the caller sent a traceparent).
async function referenceSpan() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const tracer = provider.getTracer('verdict-ref', '1');
  const attributes = { 'http.request.method': 'POST', 'http.route': '/v1/claims', 'http.response.status_code': 200 };
  const parent = api.trace.setSpanContext(api.context.active(), { traceId: randomBytes(16).toString('hex'),
    spanId: randomBytes(8).toString('hex'), traceFlags: 1, isRemote: true });
  const links = [{ context: { traceId: randomBytes(16).toString('hex'), spanId: randomBytes(8).toString('hex'), traceFlags: 1 } }];
  tracer.startSpan('receive claims', { kind: 1, attributes, links }, parent).end();
  tracer.startSpan('stats', { kind: 1, attributes }).end();
  await provider.forceFlush();
  return JSON.parse(new TextDecoder().decode(JsonTraceSerializer.serializeRequest(exporter.getFinishedSpans())));
}
const jtype = (v) => (Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v);
// Every member of got exists in ref with the same JSON type (int64 may be a string or a
// number in proto3 JSON), recursively; arrays compared element by element with ref's first.
function sameShape(got, ref, at, out) {
  if (jtype(ref) === 'object' && jtype(got) === 'object') {
    for (const k of Object.keys(got)) {
      if (!(k in ref)) out.push(`${at}.${k} is not in the SDK's export`);
      else sameShape(got[k], ref[k], `${at}.${k}`, out);
    }
  } else if (jtype(ref) === 'array' && jtype(got) === 'array') {
    // each element against the reference element it fits best (an attribute's value kind)
    got.forEach((g, i) => {
      const tries = ref.map((r) => { const o = []; sameShape(g, r, `${at}[${i}]`, o); return o; });
      out.push(...(tries.sort((a, b) => a.length - b.length)[0] || []));
    });
  } else if (jtype(got) !== jtype(ref) && !(/UnixNano|intValue/.test(at) && /^(string|number)$/.test(jtype(got)))) {
    out.push(`${at} is ${jtype(got)}, the SDK sends ${jtype(ref)}`);
  }
}

const received = [];
let hang = false;
const receiver = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (hang) return; // accept and never answer
    check(req.method === 'POST' && req.url === '/v1/traces' && req.headers['content-type'] === 'application/json',
      `the export is POST /v1/traces application/json (${req.method} ${req.url} ${req.headers['content-type']})`);
    try { received.push(JSON.parse(Buffer.concat(chunks).toString('utf8'))); } catch (e) { check(false, `the export is JSON: ${e.message}`); }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
  });
});
const spansOf = () => received.flatMap((r) => r.resourceSpans.flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans)));
const attr = (s, k) => { const a = s.attributes.find((x) => x.key === k); return a ? a.value.stringValue ?? a.value.intValue : undefined; };

let server = null;
let base = '';
async function startVerdictd(endpoint, log) {
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  const fd = openSync(log, 'w');
  server = spawn(verdictd, ['serve'], { stdio: ['ignore', fd, fd], env: { ...process.env,
    VERDICT_DATABASE_URL: `${DB_BASE} dbname=${DB}`, VERDICT_LISTEN: `127.0.0.1:${port}`, VERDICT_API_KEYS: `ops:admin:${TOKEN}`,
    VERDICT_OTLP_ENDPOINT: endpoint, VERDICT_LOG_LEVEL: 'warn', VERDICT_THREADS: '4' } });
  closeSync(fd);
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(`${base}/readyz`)).status === 200) return; } catch { /* not yet */ }
    await sleep(50);
  }
  throw new Error('verdictd did not become ready');
}
async function stopVerdictd() {
  if (!server) return;
  const gone = new Promise((r) => server.on('exit', (code, signal) => r({ code, signal })));
  server.kill('SIGTERM');
  const exit = await Promise.race([gone, sleep(15000).then(() => null)]);
  check(exit && exit.code === 0, `verdictd stopped cleanly (exit ${JSON.stringify(exit)}; a sanitizer report fails it)`);
  server = null;
}
async function call(method, p, body, traceparent) {
  const headers = { Authorization: `Bearer ${TOKEN}`, ...(body ? { 'Content-Type': 'application/json' } : {}), ...(traceparent ? { traceparent } : {}) };
  const res = await fetch(`${base}${p}`, { method, headers, body: body ? JSON.stringify(body) : undefined });
  return { status: res.status, json: await res.json().catch(() => null), traceparent: res.headers.get('traceparent') };
}

const LOG = path.join(os.tmpdir(), `verdict-otlp-${RUN}.log`);
let fatal = null;
try {
  psql(`CREATE DATABASE ${DB}`);
  const rport = await new Promise((done) => receiver.listen(0, '127.0.0.1', () => done(receiver.address().port)));
  const refDoc = await referenceSpan();
  const ref = refDoc.resourceSpans[0];
  ref.scopeSpans[0].spans.sort((a, b) => (b.parentSpanId ? 1 : 0) - (a.parentSpanId ? 1 : 0));
  check(ref.scopeSpans[0].spans[0].parentSpanId, 'the SDK reference has a span with a parent');
  await startVerdictd(`http://127.0.0.1:${rport}`, LOG);

  console.log('otlp: register, claim, a refusal and a disposition in one trace');
  const T = randomBytes(16).toString('hex');
  const P = randomBytes(8).toString('hex');
  const tp = `00-${T}-${P}-01`;
  const reg = await call('POST', '/v1/items', { items: [{ flow_step_id: 'otlp', source_type: 't', item_identifier: 'a' }] }, tp);
  const claim = await call('POST', '/v1/claims', { flow_step_id: 'otlp', worker_id: 'w' }, tp);
  const c = claim.json.claims[0];
  const refused = await call('POST', `/v1/jobs/${c.job_id}/disposition`, { claim_token: randomUUID(), disposition: 'complete' }, tp);
  const done = await call('POST', `/v1/jobs/${c.job_id}/disposition`, { claim_token: c.claim_token, disposition: 'complete' }, tp);
  await call('GET', '/v1/stats');
  check(reg.status === 200 && claim.status === 200 && refused.status === 409 && done.status === 200, 'the calls answered 200, 200, 409, 200');
  for (let i = 0; i < 100 && (spansOf().filter((s) => s.traceId === T).length < 4 || !spansOf().some((s) => s.name === 'stats')); i++) await sleep(50);
  const mine = spansOf().filter((s) => s.traceId === T);
  check(mine.length === 4, `4 spans of the trace arrived (${mine.length})`);
  const byName = (n) => mine.filter((s) => s.name === n);
  const [send] = byName('send items.register');
  const [recv] = byName('receive claims');
  const settles = byName('settle jobs.disposition');
  check(send && attr(send, 'messaging.operation.type') === 'send', 'register is a send span');
  check(recv && attr(recv, 'messaging.operation.type') === 'receive', 'claim is a receive span');
  check(settles.length === 2 && settles.every((s) => attr(s, 'messaging.operation.type') === 'settle'), 'dispositions are settle spans');
  const refusal = settles.find((s) => String(attr(s, 'http.response.status_code')) === '409');
  check(refusal && attr(refusal, 'error.type') === 'claim_mismatch' || attr(refusal, 'error.type') === 'claim_lost',
    `the refusal carries error.type (${refusal && attr(refusal, 'error.type')})`);
  check(mine.every((s) => s.parentSpanId === P && s.kind === 2 && /^[0-9a-f]{16}$/.test(s.spanId)), 'each is a SERVER span whose parent is the caller\'s span');
  check(mine.every((s) => BigInt(s.startTimeUnixNano) <= BigInt(s.endTimeUnixNano) && BigInt(s.endTimeUnixNano) > 1700000000000000000n), 'start and end are Unix nanoseconds in order');
  check(done.traceparent && done.traceparent.includes(`-${settles.find((s) => s !== refusal).spanId}-`), 'the answer\'s traceparent names the exported span');
  check(attr(send, 'http.route') === '/v1/items' && attr(send, 'messaging.system') === 'verdict', 'http.route and messaging.system');
  check(!recv.links || recv.links.length === 0, 'the first claim of an item has no links');

  // a retry: the item's second claim (another trace) links to its first claim's span
  const T2 = randomBytes(16).toString('hex');
  const T3 = randomBytes(16).toString('hex');
  await call('POST', '/v1/items', { items: [{ flow_step_id: 'otlp-retry', source_type: 't', item_identifier: 'b' }] });
  const first = await call('POST', '/v1/claims', { flow_step_id: 'otlp-retry', worker_id: 'w' }, `00-${T2}-${P}-01`);
  const c1 = first.json.claims[0];
  const rel = await call('POST', `/v1/jobs/${c1.job_id}/release`, { claim_token: c1.claim_token });
  const second = await call('POST', '/v1/claims', { flow_step_id: 'otlp-retry', worker_id: 'w' }, `00-${T3}-${P}-01`);
  check(rel.status === 200 && second.status === 200 && second.json.claims[0].item.id === c1.item.id, 'the released item is claimed again');
  const S2 = first.traceparent.split('-')[2];
  for (let i = 0; i < 100 && !spansOf().some((s) => s.traceId === T3); i++) await sleep(50);
  const retry = spansOf().find((s) => s.traceId === T3 && s.name === 'receive claims');
  check(retry && JSON.stringify(retry.links) === JSON.stringify([{ traceId: T2, spanId: S2 }]),
    `the retry's claim span links to the first claim's trace and span (${JSON.stringify(retry && retry.links)})`);
  const untraced = spansOf().find((s) => s.name === 'stats');
  check(untraced && !untraced.parentSpanId && untraced.traceId !== T, 'a request without traceparent gets a span of its own trace');
  const problems = [];
  for (const r of received) sameShape(r, { resourceSpans: [ref] }, 'request', problems);
  check(problems.length === 0, `every member has the SDK's shape (${problems.slice(0, 5).join('; ')})`);
  check(attr(received[0].resourceSpans[0].resource, 'service.name') === 'verdictd', 'resource service.name is verdictd');
  let metrics = await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
  check(/verdict_otlp_spans_total\{result="exported"\} [1-9]/.test(metrics), 'verdict_otlp_spans_total counts the exported spans');
  await stopVerdictd();

  console.log('otlp: a receiver that never answers does not slow requests; a full queue drops');
  // 6000 requests, 50 at a time: their p50 and p99, without export and with a hung receiver
  const load = async (what) => {
    const times = [];
    const t0 = Date.now();
    for (let w = 0; w < 6000; w += 50) {
      await Promise.all(Array.from({ length: 50 }, async () => {
        const s = performance.now();
        await fetch(`${base}/healthz`);
        times.push(performance.now() - s);
      }));
    }
    times.sort((a, b) => a - b);
    const r = { p50: times[3000], p99: times[5940] };
    console.log(`otlp: 6000 /healthz ${what}: ${Date.now() - t0} ms, p50 ${r.p50.toFixed(2)} ms, p99 ${r.p99.toFixed(2)} ms`);
    return r;
  };
  await startVerdictd('', LOG);
  const without = await load('without export');
  await stopVerdictd();
  hang = true;
  await startVerdictd(`http://127.0.0.1:${rport}/v1/traces`, LOG);
  const hung = await load('exporting to a receiver that never answers');
  check(hung.p50 < without.p50 * 2 + 5, `requests do not wait for the export (p50 ${hung.p50.toFixed(1)} vs ${without.p50.toFixed(1)} ms)`);
  metrics = await (await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${TOKEN}` } })).text();
  const dropped = Number((metrics.match(/verdict_otlp_spans_total\{result="dropped"\} (\d+)/) || [])[1] || 0);
  check(dropped > 0, `spans the full queue could not hold are counted (dropped ${dropped})`);
  const t1 = Date.now();
  await stopVerdictd();
  console.log(`otlp: verdictd stopped in ${Date.now() - t1} ms with a hung receiver`);
  check(Date.now() - t1 < 8000, 'a hung receiver delays the stop by at most the export\'s bound');
} catch (e) {
  fatal = e;
}
await stopVerdictd().catch(() => {});
receiver.closeAllConnections?.();
receiver.close();
try { psql(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`); } catch (e) { console.error(e.message); }
if (fatal) { failed++; console.log(`FAIL aborted: ${fatal.stack}`); }
if (failed && existsSync(LOG)) console.log(readFileSync(LOG, 'utf8').split('\n').slice(-15).join('\n'));
rmSync(LOG, { force: true });
console.log(`otlp: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
