// tests/contract/contract.mjs - the OpenAPI contract test.
//
// Starts the real verdictd against a fresh PostgreSQL database, drives every operation of
// openapi/verdict.yaml (happy paths and every error path a client can reach, then a database
// outage for the 503s), and checks each answer against the document with ajv (JSON Schema
// 2020-12, which is what OpenAPI 3.1 schemas are): the status must be documented for the
// operation, the Content-Type must be the documented one, the body must validate against the
// documented schema, the documented headers must hold, and an error body must agree with the
// one error table (src/common/include/verdict/error.h). The other direction is checked too:
// what the server accepted must be valid under the documented request schemas and parameters,
// and a body or parameter the server refused with a 400 naming it must be invalid under them.
// Finally the route table (src/http/routes.c) and the document must list the same endpoints
// with the same least roles, and the binary must serve the document as written.
//
//   node tests/contract/contract.mjs --verdictd build/verdictd     (from the repository root)
//
// Needs VERDICT_TEST_DATABASE_URL (a libpq keyword string for a superuser; exits 77, "skipped",
// without it), `psql`, and the npm tools of tests/openapi (scripts/openapi.sh installs them;
// this test runs the same `npm ci` when they are missing). Exits 1 on any failure, after
// printing every one of them. Always stops the server and drops its database.
import { createRequire } from 'node:module';
import { existsSync, readFileSync, openSync, closeSync, unlinkSync } from 'node:fs';
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TOOLS = path.join(ROOT, 'tests/openapi');
const started = Date.now();

// ------------------------------------------------------------------------------------------
// arguments, skip, tools

function usage(msg) {
  console.error(`contract: ${msg}\nusage: node tests/contract/contract.mjs --verdictd <path>`);
  process.exit(2);
}
let verdictd = null;
for (let i = 2; i < process.argv.length; i++) {
  if (process.argv[i] === '--verdictd') verdictd = process.argv[++i];
  else usage(`unknown argument '${process.argv[i]}'`);
}
if (!verdictd) usage('--verdictd is required');
verdictd = path.resolve(verdictd);
if (!existsSync(verdictd)) usage(`no such binary: ${verdictd}`);

const DB_BASE = process.env.VERDICT_TEST_DATABASE_URL;
if (!DB_BASE) {
  console.log('VERDICT_TEST_DATABASE_URL is not set: skipping');
  process.exit(77);
}

if (!existsSync(path.join(TOOLS, 'node_modules/ajv')) ||
    !existsSync(path.join(TOOLS, 'node_modules/ajv-formats')) ||
    !existsSync(path.join(TOOLS, 'node_modules/js-yaml'))) {
  console.log('contract: installing tests/openapi npm tools (npm ci)');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error'],
    { cwd: TOOLS, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('contract: npm ci in tests/openapi failed (run scripts/openapi.sh check)');
    process.exit(1);
  }
}
const require = createRequire(path.join(TOOLS, 'package.json'));
const Ajv2020 = require('ajv/dist/2020.js').default;
const addFormats = require('ajv-formats').default;
const yaml = require('js-yaml');

// ------------------------------------------------------------------------------------------
// failures and counts, by check category

const categories = new Map(); // name -> {responses, failures: []}
let current = null;
function category(name) {
  if (!categories.has(name)) categories.set(name, { responses: 0, checks: 0, failures: [] });
  current = categories.get(name);
  return current;
}
function fail(what, msg) {
  current.failures.push(`${what}: ${msg}`);
}
function check(cond, what, msg) {
  current.checks++;
  if (!cond) fail(what, msg);
  return !!cond;
}
const snip = (s, n = 300) => {
  const t = typeof s === 'string' ? s : JSON.stringify(s);
  return t === undefined ? String(t) : t.length > n ? `${t.slice(0, n)}…` : t;
};

// ------------------------------------------------------------------------------------------
// the document

category('spec');
const SPEC_TEXT = readFileSync(path.join(ROOT, 'openapi/verdict.yaml'), 'utf8');
const spec = yaml.load(SPEC_TEXT);
const SPEC_ID = 'https://verdict.invalid/openapi.yaml';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];
const ROLES = ['none', 'reader', 'worker', 'admin'];

const esc = (s) => String(s).replace(/~/g, '~0').replace(/\//g, '~1');
const unesc = (s) => s.replace(/~1/g, '/').replace(/~0/g, '~');
const ptrOf = (...segs) => segs.map((s) => `/${esc(s)}`).join('');
function at(ptr) {
  return ptr.split('/').slice(1).map(unesc).reduce((o, k) => (o == null ? undefined : o[k]), spec);
}
// Follow local $refs from ptr; the pointer and node of what it finally names.
function follow(ptr) {
  let node = at(ptr);
  for (let n = 0; node && typeof node.$ref === 'string' && n < 10; n++) {
    if (!node.$ref.startsWith('#/')) throw new Error(`non-local $ref ${node.$ref} at ${ptr}`);
    ptr = node.$ref.slice(1);
    node = at(ptr);
  }
  if (node === undefined) throw new Error(`dangling reference at ${ptr}`);
  return { ptr, node };
}

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addFormat('int32', { type: 'number', validate: (n) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
ajv.addFormat('int64', { type: 'number', validate: (n) => Number.isSafeInteger(n) });
ajv.addSchema({ ...spec, $id: SPEC_ID });
const validators = new Map();
// A validator for the schema at a JSON pointer into the document (its $refs resolve there).
function validatorAt(ptr) {
  if (!validators.has(ptr)) {
    const frag = ptr.split('/').map(encodeURIComponent).join('/');
    validators.set(ptr, ajv.compile({ $ref: `${SPEC_ID}#${frag}` }));
  }
  return validators.get(ptr);
}
const ajvErrors = (v) => (v.errors || []).slice(0, 4)
  .map((e) => `${e.instancePath || '/'} ${e.message}${e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : ''}`)
  .join('; ');

// operationId -> {id, method, template, ptr, op, role, params: [{name, in, required, schemaPtr}]}
const ops = new Map();
for (const [tpl, item] of Object.entries(spec.paths)) {
  for (const m of METHODS) {
    if (!item[m]) continue;
    const op = item[m];
    const ptr = ptrOf('paths', tpl, m);
    const params = [];
    const addParams = (base, list) => (list || []).forEach((_, i) => {
      const p = follow(`${base}/parameters/${i}`);
      params.push({ name: p.node.name, in: p.node.in, required: !!p.node.required, schemaPtr: `${p.ptr}/schema` });
    });
    addParams(ptrOf('paths', tpl), item.parameters);
    addParams(ptr, op.parameters);
    const sec = op.security !== undefined ? op.security : spec.security;
    const role = sec.length === 0 ? 'none' : (sec[0].bearer || [])[0];
    let bodyPtr = null;
    if (op.requestBody) {
      const rb = follow(`${ptr}/requestBody`);
      if (rb.node.content && rb.node.content['application/json'])
        bodyPtr = `${rb.ptr}${ptrOf('content', 'application/json', 'schema')}`;
    }
    if (!op.operationId) { fail(`${m.toUpperCase()} ${tpl}`, 'no operationId'); continue; }
    ops.set(op.operationId, {
      id: op.operationId, method: m.toUpperCase(), template: tpl, ptr, op, role, params, bodyPtr,
      bodyRequired: !!(op.requestBody && follow(`${ptr}/requestBody`).node.required),
    });
  }
}
// Compile everything up front: a broken schema anywhere is a failure of its own.
for (const o of ops.values()) {
  try {
    for (const code of Object.keys(o.op.responses)) {
      const r = follow(`${o.ptr}${ptrOf('responses', code)}`);
      for (const mt of Object.keys(r.node.content || {}))
        validatorAt(`${r.ptr}${ptrOf('content', mt, 'schema')}`);
    }
    if (o.bodyPtr) validatorAt(o.bodyPtr);
    for (const p of o.params) validatorAt(p.schemaPtr);
  } catch (e) {
    fail(o.id, `schema does not compile: ${e.message}`);
  }
}
const errorSchema = validatorAt('/components/schemas/Error');
// Every answer carries X-Request-Id, and any route can fail with 500 internal (never from
// client input, so it is documented here and not driven below).
for (const o of ops.values()) {
  for (const code of Object.keys(o.op.responses)) {
    const r = follow(`${o.ptr}${ptrOf('responses', code)}`).node;
    check(r.headers && r.headers['X-Request-Id'], `${o.id} ${code}`, 'does not document the X-Request-Id header');
  }
  check(o.op.responses['500'] || o.op.responses['5XX'] || o.op.responses.default, o.id, 'does not document 500 internal');
}

// The one error table: code -> {status, retryable, hint}.
const ERROR_TABLE = new Map();
{
  const h = readFileSync(path.join(ROOT, 'src/common/include/verdict/error.h'), 'utf8');
  const map = h.slice(h.indexOf('#define VD_ERROR_MAP'), h.indexOf('typedef enum'));
  for (const chunk of map.split(/\bXX\(/).slice(1)) {
    const m = /^\s*(\w+),\s*"([a-z_]+)",\s*(\d{3}),\s*(true|false),/.exec(chunk);
    if (!m) continue;
    const rest = chunk.slice(m[0].length);
    const hint = [...rest.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1].replace(/\\(.)/g, '$1')).join('');
    ERROR_TABLE.set(m[2], { status: Number(m[3]), retryable: m[4] === 'true', hint });
  }
  check(ERROR_TABLE.size >= 10, 'src/common/include/verdict/error.h', `parsed only ${ERROR_TABLE.size} rows of VD_ERROR_MAP`);
  const documented = new Set(at('/components/schemas/Error/properties/error/enum'));
  for (const code of ERROR_TABLE.keys())
    check(documented.has(code), 'Error.error enum', `'${code}' (error table) is not documented`);
  for (const code of documented)
    check(ERROR_TABLE.has(code), 'Error.error enum', `'${code}' is documented but not in the error table`);
}

// openapi/verdict.json is the YAML, generated (scripts/openapi.sh gen).
{
  const jsonPath = path.join(ROOT, 'openapi/verdict.json');
  check(existsSync(jsonPath) && isDeepStrictEqual(JSON.parse(readFileSync(jsonPath, 'utf8')), spec),
    'openapi/verdict.json', 'is not openapi/verdict.yaml (run scripts/openapi.sh gen)');
}

// ------------------------------------------------------------------------------------------
// the route table against the document, both ways (with the least role of each)

category('routes');
{
  const src = readFileSync(path.join(ROOT, 'src/http/routes.c'), 'utf8');
  const routes = [...src.matchAll(/\{\s*"([A-Z]+)"\s*,\s*"([^"]+)"\s*,\s*VD_ROLE_([A-Z]+)\s*,/g)]
    .map((m) => ({ method: m[1], path: m[2], role: m[3].toLowerCase() }));
  check(routes.length > 0, 'src/http/routes.c', 'no routes parsed');
  const key = (m, p) => `${m} ${p}`;
  const routed = new Map(routes.map((r) => [key(r.method, r.path), r]));
  const documented = new Map([...ops.values()].map((o) => [key(o.method, o.template), o]));
  check(routed.size === routes.length, 'src/http/routes.c', 'a method+path is routed twice');
  for (const [k, r] of routed) {
    const o = documented.get(k);
    if (!check(o, k, 'is routed (src/http/routes.c) but not in openapi/verdict.yaml')) continue;
    check(o.role === r.role, k, `least role: routes.c says ${r.role}, the spec's security says ${o.role}`);
  }
  for (const k of documented.keys())
    check(routed.has(k), k, 'is in openapi/verdict.yaml but no route serves it');
  console.log(`routes: ${routes.length} routes in src/http/routes.c, ${documented.size} operations in openapi/verdict.yaml`);
}

// ------------------------------------------------------------------------------------------
// database and server

const RUN = `${process.pid}_${Date.now().toString(36)}`;
const DB_NAME = `verdict_contract_${RUN}`;
const MAX_BODY = 262144;
const TOKENS = { reader: `rd-${randomUUID()}`, worker: `wk-${randomUUID()}`, admin: `ad-${randomUUID()}` };
const LOG_PATH = path.join(os.tmpdir(), `verdict-contract-${RUN}.log`);
let server = null;
let serverExit = null;
let dbCreated = false;
let port = 0;

function psql(sql) {
  const r = spawnSync('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', DB_BASE, '-c', sql],
    { encoding: 'utf8', timeout: 60000 });
  if (r.error) throw new Error(`psql: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`psql -c "${sql}": ${r.stderr.trim()}`);
  return r.stdout;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = s.address().port;
      s.close(() => resolve(p));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function startServer() {
  psql(`CREATE DATABASE ${DB_NAME}`);
  dbCreated = true;
  port = await freePort();
  const log = openSync(LOG_PATH, 'w');
  server = spawn(verdictd, ['serve'], {
    stdio: ['ignore', log, log],
    env: {
      ...process.env,
      VERDICT_DATABASE_URL: `${DB_BASE} dbname=${DB_NAME}`,
      VERDICT_LISTEN: `127.0.0.1:${port}`,
      VERDICT_API_KEYS: `dash:reader:${TOKENS.reader},bot:worker:${TOKENS.worker},ops:admin:${TOKENS.admin}`,
      VERDICT_THREADS: '4',
      VERDICT_LOG_LEVEL: 'warn',
      VERDICT_MAX_BODY_BYTES: String(MAX_BODY),
      VERDICT_LOOP_THRESHOLD: '3',
      VERDICT_LEASE_SECONDS: '300',
      VERDICT_AUTO_MIGRATE: '1',
    },
  });
  closeSync(log);
  server.on('exit', (code, signal) => { serverExit = { code, signal }; });
  for (let i = 0; i < 600; i++) {
    if (serverExit) throw new Error(`verdictd exited at start (${JSON.stringify(serverExit)})`);
    try {
      const r = await send('GET', '/readyz', {}, null);
      if (r.status === 200) return;
    } catch { /* not listening yet */ }
    await sleep(50);
  }
  throw new Error('verdictd did not become ready within 30 s');
}

let cleaned = false;
async function cleanup() {
  if (cleaned) return;
  cleaned = true;
  agent.destroy();
  if (server && !serverExit) {
    server.kill('SIGTERM');
    for (let i = 0; i < 200 && !serverExit; i++) await sleep(25);
    if (!serverExit) {
      category('lifecycle');
      fail('SIGTERM', 'verdictd did not exit within 5 s; killed');
      server.kill('SIGKILL');
      for (let i = 0; i < 100 && !serverExit; i++) await sleep(20);
    }
  }
  if (dbCreated) {
    try { psql(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`); } catch (e) { console.error(`contract: ${e.message}`); }
  }
}
function cleanupSync() {
  if (server && !serverExit) { try { server.kill('SIGKILL'); } catch { /* gone */ } }
  if (dbCreated && !cleaned) {
    cleaned = true;
    spawnSync('psql', ['-X', '-q', '-d', DB_BASE, '-c', `DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`], { timeout: 30000 });
  }
}
process.on('exit', cleanupSync);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => { cleanupSync(); process.exit(130); });

// ------------------------------------------------------------------------------------------
// HTTP

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
function send(method, urlPath, headers, body) {
  return new Promise((resolve, reject) => {
    const h = { ...headers };
    if (body != null) h['Content-Length'] = Buffer.byteLength(body);
    else if (method !== 'GET' && method !== 'HEAD') h['Content-Length'] = 0;
    const req = http.request({ host: '127.0.0.1', port, method, path: urlPath, headers: h, agent }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, buf: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(20000, () => req.destroy(new Error(`${method} ${urlPath}: no answer in 20 s`)));
    req.end(body == null ? undefined : body);
  });
}

function authHeader(token) {
  if (token == null) return {};
  if (TOKENS[token]) return { Authorization: `Bearer ${TOKENS[token]}` };
  return { Authorization: token };
}

const mediaType = (ct) => (ct || '').split(';')[0].trim().toLowerCase();
// The error envelope of an answer: the body itself, or for the MCP endpoint's JSON-RPC errors
// the envelope in error.data (undefined for a JSON-RPC error that carries none, e.g. -32600).
const isRpc = (body) => !!(body && typeof body === 'object' && body.jsonrpc === '2.0');
function envOf(body) {
  if (!isRpc(body)) return body;
  const d = body.error && body.error.data;
  return d && typeof d === 'object' && typeof d.error === 'string' ? d : undefined;
}
// GET and DELETE /mcp: their only answer is 405 (the transport's "no stream, no session").
const ONLY_405 = new Set(['mcpOpenStream', 'mcpEndSession']);
const covered = new Map(); // opId -> Map(documented key -> count)
for (const id of ops.keys()) covered.set(id, new Map());
let responsesValidated = 0;

// Coerce a path/query/header value to what its schema's type expects, for validation.
function coerce(schemaPtr, value) {
  const s = follow(schemaPtr).node;
  const types = [].concat(s.type || []);
  if ((types.includes('integer') || types.includes('number')) && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (types.includes('boolean') && (value === 'true' || value === 'false')) return value === 'true';
  return value;
}

// Check a response against what the document says for this operation (o) or, for
// requests no operation matches (o null), against the Error envelope.
function checkResponse(label, o, res, c) {
  responsesValidated++;
  current.responses++;
  const status = res.status;
  const ct = res.headers['content-type'];
  const text = res.buf.toString('utf8');
  let body;
  const rid = res.headers['x-request-id'];
  check(typeof rid === 'string' && /^[A-Za-z0-9._:-]{1,64}$/.test(rid), label, `X-Request-Id is missing or not sane: ${snip(rid)}`);
  let schemaPtr = null;
  if (o) {
    const responses = o.op.responses;
    const s = String(status);
    const key = responses[s] ? s : responses[`${s[0]}XX`] ? `${s[0]}XX` : responses.default ? 'default' : null;
    if (!check(key, label, `status ${status} is not documented for ${o.id} (documented: ${Object.keys(responses).join(', ')}); body ${snip(text)}`)) return undefined;
    covered.get(o.id).set(key, (covered.get(o.id).get(key) || 0) + 1);
    const r = follow(`${o.ptr}${ptrOf('responses', key)}`);
    const content = r.node.content || {};
    const mt = mediaType(ct);
    if (Object.keys(content).length === 0) {
      check(res.buf.length === 0, label, `${status} documents no body but got ${snip(text)}`);
    } else if (check(content[mt], label, `Content-Type '${ct}' is not documented for ${status} (documented: ${Object.keys(content).join(', ')})`)) {
      schemaPtr = `${r.ptr}${ptrOf('content', mt, 'schema')}`;
    }
    // documented headers that are present must hold their schema
    for (const hname of Object.keys(r.node.headers || {})) {
      const h = follow(`${r.ptr}${ptrOf('headers', hname)}`);
      const v = res.headers[hname.toLowerCase()];
      if (h.node.required) check(v !== undefined, label, `header ${hname} is required`);
      if (v !== undefined && h.node.schema) {
        const val = validatorAt(`${h.ptr}/schema`);
        const cv = coerce(`${h.ptr}/schema`, v);
        check(val(cv), label, `header ${hname}: '${v}' ${ajvErrors(val)}`);
      }
    }
    for (const hname of ['idempotent-replayed', 'retry-after']) {
      if (res.headers[hname] !== undefined) {
        const documented = Object.keys(r.node.headers || {}).some((k) => k.toLowerCase() === hname);
        check(documented, label, `header ${hname} is sent but not documented for ${o.id} ${status}`);
      }
    }
  } else {
    check(mediaType(ct) === 'application/json', label, `Content-Type '${ct}' is not application/json`);
  }
  if (mediaType(ct) === 'application/json' && res.buf.length > 0) {
    try { body = JSON.parse(text); } catch (e) { fail(label, `body is not JSON: ${e.message}: ${snip(text)}`); return undefined; }
  } else {
    body = text;
  }
  const v = schemaPtr ? validatorAt(schemaPtr) : (!o && status >= 400 ? errorSchema : null);
  if (v) check(v(body), label, `body does not validate against ${schemaPtr || '/components/schemas/Error'}: ${ajvErrors(v)}; body ${snip(text)}`);
  // error bodies agree with the one error table
  if (isRpc(body) && body.error && envOf(body)) {
    const want = { invalid_json: -32700, internal: -32603 }[envOf(body).error] || -32000;
    check(body.error.code === want, label, `JSON-RPC code ${body.error.code} for '${envOf(body).error}', want ${want}`);
    check(body.id === undefined, label, 'a transport refusal carries an id');
  }
  const env = envOf(body);
  if (status >= 400 && env && typeof env === 'object') {
    const body = env;
    const row = ERROR_TABLE.get(body.error);
    if (check(row, label, `error code '${body.error}' is not in the error table`)) {
      check(row.status === status, label, `error '${body.error}' is ${row.status} in the error table but was answered ${status}`);
      check(row.retryable === body.retryable, label, `error '${body.error}': retryable ${body.retryable}, the table says ${row.retryable}`);
      check(row.hint === body.hint, label, `error '${body.error}': hint differs from the error table`);
      if (row.retryable) check(res.headers['retry-after'] !== undefined, label, 'a retryable error without Retry-After');
    }
  }
  // what the caller expected
  if (c.expect !== undefined) {
    check(status === c.expect, label, `expected ${c.expect}, got ${status}: ${snip(text)}`);
    if (c.error !== undefined && body && typeof body === 'object')
      check(env && env.error === c.error, label, `expected error '${c.error}', got '${env && env.error}': ${snip(text)}`);
    if (c.field !== undefined && body && typeof body === 'object')
      check(env && env.field === c.field, label, `expected field '${c.field}', got '${env && env.field}'`);
  }
  return body;
}

// The request side: what the server accepted must be valid under the documented parameters
// and request schema; a 400 naming a parameter or body field must be invalid under them.
function checkRequest(label, o, c, pathVals, status, answer) {
  const body = envOf(answer);
  const isOk = status >= 200 && status < 300;
  const values = [];
  for (const p of o.params) {
    let v;
    if (p.in === 'path') v = pathVals[p.name];
    else if (p.in === 'query') v = c.query && c.query[p.name] !== undefined ? String(c.query[p.name]) : undefined;
    else if (p.in === 'header') {
      const hk = Object.keys(c.headers || {}).find((k) => k.toLowerCase() === p.name.toLowerCase());
      v = hk ? c.headers[hk] : undefined;
    }
    values.push({ p, v: v === undefined ? undefined : String(v) });
  }
  const paramOk = ({ p, v }) => {
    if (v === undefined) return !p.required;
    const val = validatorAt(p.schemaPtr);
    return val(coerce(p.schemaPtr, v)) ? true : ajvErrors(val);
  };
  let parsed;
  let bodyIsJson = false;
  if (c.json !== undefined) { parsed = c.json; bodyIsJson = true; } else if (typeof c.raw === 'string' && (c.ctype || 'application/json').startsWith('application/json')) {
    try { parsed = JSON.parse(c.raw); bodyIsJson = true; } catch { /* not JSON */ }
  }
  if (isOk) {
    for (const pv of values) {
      const r = paramOk(pv);
      check(r === true, label, `the server accepted ${pv.p.in} parameter ${pv.p.name}='${pv.v}' but the spec rejects it: ${r}`);
    }
    for (const q of Object.keys(c.query || {}))
      check(o.params.some((p) => p.in === 'query' && p.name === q), label, `query parameter '${q}' was accepted but is not documented`);
    // (an operation without a request body ignores a well-formed one: SPEC §2 accepts `{}`
    // wherever no field is required)
    if (bodyIsJson && o.bodyPtr && c.specAccepts !== false) {
      const val = validatorAt(o.bodyPtr);
      check(val(parsed), label, `the server accepted this body but the request schema rejects it: ${ajvErrors(val)}; body ${snip(parsed)}`);
    }
    if (!bodyIsJson && c.raw === undefined && o.bodyRequired && c.specAccepts !== false)
      fail(label, `the server accepted a call without a body, but ${o.id}'s requestBody is required`);
  } else if (status === 400 && body && (body.error === 'invalid_field' || body.error === 'missing_field') && c.specRejects !== false) {
    const pv = values.find(({ p }) => p.name === body.field);
    if (pv) {
      check(paramOk(pv) !== true, label, `the server refused ${pv.p.in} parameter ${pv.p.name}='${pv.v}' but the spec accepts it`);
    } else if (bodyIsJson && o.bodyPtr) {
      const val = validatorAt(o.bodyPtr);
      check(!val(parsed), label, `the server refused field '${body.field}' (${body.error}) but the request schema accepts the body ${snip(parsed)}`);
    } else if (!bodyIsJson && o.bodyRequired === false && c.raw === undefined) {
      fail(label, `400 ${body.error} '${body.field}' without a body`);
    }
  }
}

// Drive one operation: c = {params, query, token, json | raw, ctype, headers, expect, error,
// field, label, specAccepts, specRejects}. Returns {status, headers, body}.
async function call(opId, c = {}) {
  const o = ops.get(opId);
  if (!o) throw new Error(`no operation ${opId} in the spec`);
  const pathVals = {};
  let url = o.template.replace(/\{(\w+)\}/g, (_, k) => {
    if (!c.params || c.params[k] === undefined) throw new Error(`${opId}: path parameter ${k} missing`);
    pathVals[k] = String(c.params[k]);
    return encodeURIComponent(String(c.params[k]));
  });
  if (c.query) url += `?${new URLSearchParams(c.query)}`;
  const headers = { ...authHeader(c.token === undefined ? (o.role === 'none' ? null : o.role) : c.token), ...(c.headers || {}) };
  let body = null;
  if (c.json !== undefined) body = JSON.stringify(c.json);
  else if (c.raw !== undefined) body = c.raw;
  if (body != null) headers['Content-Type'] = c.ctype || 'application/json';
  const label = `${c.label ? `${c.label}: ` : ''}${o.method} ${url.length > 120 ? `${url.slice(0, 120)}…` : url}${c.expect ? ` (want ${c.expect}${c.error ? ` ${c.error}` : ''})` : ''}`;
  const res = await send(c.method || o.method, url, headers, body);
  const parsed = checkResponse(label, o, res, c);
  checkRequest(label, o, c, pathVals, res.status, parsed);
  return { status: res.status, headers: res.headers, body: parsed, text: res.buf.toString('utf8') };
}

// A request that no operation matches (unknown path, wrong method).
async function callRaw(method, url, c = {}) {
  const headers = { ...authHeader(c.token === undefined ? null : c.token), ...(c.headers || {}) };
  const body = c.raw !== undefined ? c.raw : null;
  if (body != null) headers['Content-Type'] = c.ctype || 'application/json';
  const label = `${c.label ? `${c.label}: ` : ''}${method} ${url.slice(0, 120)}${c.expect ? ` (want ${c.expect})` : ''}`;
  const res = await send(method, url, headers, body);
  const parsed = checkResponse(label, null, res, c);
  return { status: res.status, headers: res.headers, body: parsed, label };
}

// Run one scenario group; an exception (a broken assumption) is a failure, not a crash.
async function group(name, fn) {
  category(name);
  try {
    await fn();
  } catch (e) {
    fail(name, `aborted: ${e.stack || e.message}`);
  }
  if (serverExit) throw new Error(`verdictd died during '${name}' (${JSON.stringify(serverExit)})`);
}

// ------------------------------------------------------------------------------------------
// scenarios

const FS = `contract_${RUN}`; // the main flow step
const FS_EMPTY = `${FS}_empty`;
const FS_IDEM = `${FS}_idem`;
const FS_PAUSE = `${FS}_pause`;
const NO_SUCH_ID = 987654321987;
const BAD_TOKEN = '00000000-0000-4000-8000-000000000000';
const SUCCESS_SESSION = {
  returncode: 0, termination: 'natural_exit', channel: 'channel_a', completion_marker: '%%ORDER_UP%%',
  stdout: '{"type": "result", "subtype": "success", "is_error": false, "result": "Task done. %%ORDER_UP%%"}',
};
const RETRY_SESSION = {
  returncode: 0, completion_marker: '%%ORDER_UP%%',
  stdout: '{"type": "result", "subtype": "success", "is_error": false, "result": "I did the work but forgot the marker."}',
};
const ctx = {}; // ids shared between groups

async function system() {
  const h = await call('healthz', { expect: 200 });
  check(h.body && h.body.status === 'ok', 'healthz', 'status is not ok');
  await call('readyz', { expect: 200 });
  const j = await call('getOpenapiJson', { expect: 200 });
  check(isDeepStrictEqual(j.body, spec), 'GET /openapi.json', 'the served document is not openapi/verdict.yaml (rebuild verdictd)');
  const y = await call('getOpenapiYaml', { expect: 200 });
  check(y.text === SPEC_TEXT, 'GET /openapi.yaml', 'the served YAML is not openapi/verdict.yaml (rebuild verdictd)');
  const m = await call('getMetrics', { token: 'reader', expect: 200 });
  check(/^verdict_up 1$/m.test(m.text), 'GET /metrics', 'no "verdict_up 1" line');
  // request ids: a sane one is kept, an insane one replaced
  const r1 = await call('healthz', { headers: { 'X-Request-Id': 'contract-1.a:B_c' }, expect: 200, label: 'sane X-Request-Id' });
  check(r1.headers['x-request-id'] === 'contract-1.a:B_c', 'X-Request-Id', `a sane id was not kept: ${r1.headers['x-request-id']}`);
  const r2 = await call('healthz', { headers: { 'X-Request-Id': 'x'.repeat(65) }, expect: 200, label: 'long X-Request-Id' });
  check(r2.headers['x-request-id'] !== 'x'.repeat(65), 'X-Request-Id', 'a 65-byte id was kept');
  // HEAD is served wherever GET is, without a body
  for (const p of ['/healthz', '/v1/flow-steps']) {
    const r = await send('HEAD', p, authHeader('reader'), null);
    current.responses++;
    responsesValidated++;
    check(r.status === 200 && r.buf.length === 0, `HEAD ${p}`, `expected 200 without a body, got ${r.status} (${r.buf.length} bytes)`);
  }
}

async function items() {
  const mk = (id, extra = {}) => ({ flow_step_id: FS, source_type: 'rss', item_identifier: `https://ex.org/${id}`, ...extra });
  const reg = await call('registerItems', {
    expect: 200,
    json: { items: [mk('a1', { payload: { title: 'A' }, priority: 5 }), mk('a2', { max_attempts: 2, max_defers: 1 }), mk('a3'),
      mk('a4'), mk('a5'), mk('a6', { delay_seconds: 0 }), mk('a7')] },
  });
  ctx.items = reg.body.items;
  check(reg.body.items.length === 7 && reg.body.items.every((i) => i.created), 'registerItems', 'not 7 created items');
  const again = await call('registerItems', { expect: 200, json: { items: [mk('a1'), mk('new1')] }, label: 'existing + new' });
  check(again.body.items[0].created === false && again.body.items[1].created === true, 'registerItems', 'created flags wrong on re-register');
  ctx.newItem = again.body.items[1].id;
  // Idempotency-Key: replay, reuse with another body, bad key
  const key = `reg-${RUN}`;
  const first = await call('registerItems', { expect: 200, headers: { 'Idempotency-Key': key }, json: { items: [mk('idem1')] }, label: 'idempotent first' });
  check(first.headers['idempotent-replayed'] === undefined, 'registerItems', 'a first call says Idempotent-Replayed');
  const rep = await call('registerItems', { expect: 200, headers: { 'Idempotency-Key': key }, json: { items: [mk('idem1')] }, label: 'idempotent replay' });
  check(rep.headers['idempotent-replayed'] === 'true', 'registerItems', 'replay without Idempotent-Replayed: true');
  check(isDeepStrictEqual(rep.body, first.body), 'registerItems', 'replay body differs from the first answer');
  await call('registerItems', { expect: 422, error: 'idempotency_key_reused', field: 'Idempotency-Key', headers: { 'Idempotency-Key': key }, json: { items: [mk('idem2')] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'Idempotency-Key', headers: { 'Idempotency-Key': 'k'.repeat(256) }, json: { items: [mk('idem3')] } });
  // field validation
  await call('registerItems', { expect: 400, error: 'missing_field', field: 'items', json: {} });
  await call('registerItems', { expect: 400, error: 'missing_field', field: 'items', label: 'empty body' });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items', json: { items: [] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items', json: { items: 'x' } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].source_type', json: { items: [{ ...mk('b'), source_type: 5 }] } });
  await call('registerItems', { expect: 400, error: 'missing_field', field: 'items[1].item_identifier', json: { items: [mk('b'), { flow_step_id: FS, source_type: 'rss' }] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].priority', json: { items: [mk('b', { priority: 1.5 })] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].max_attempts', json: { items: [mk('b', { max_attempts: 0 })] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].max_defers', json: { items: [mk('b', { max_defers: 101 })] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].delay_seconds', json: { items: [mk('b', { delay_seconds: 604801 })] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].payload', json: { items: [mk('b', { payload: [1] })] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].flow_step_id', json: { items: [{ ...mk('b'), flow_step_id: 'f'.repeat(201) }] } });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].item_identifier', json: { items: [{ ...mk('b'), item_identifier: '' }] } });
  // lengths are counted in UTF-8 bytes (documented): 51 × 'é' is 102 bytes > 100; JSON
  // Schema counts characters, so the request schema cannot say this
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].source_type', json: { items: [{ ...mk('b'), source_type: 'é'.repeat(51) }] }, specRejects: false, label: 'byte length' });
  // malformed JSON in its documented forms
  const bad = {
    'malformed': '{"items": [',
    'NaN': '{"items": NaN}',
    'trailing bytes': '{"items": []} x',
    'too deep': `${'['.repeat(33)}${']'.repeat(33)}`,
    '\\u0000': '{"items": [{"flow_step_id": "a\\u0000b"}]}',
    'not an object': '[]',
  };
  for (const [what, raw] of Object.entries(bad)) await call('registerItems', { expect: 400, error: 'invalid_json', raw, label: what });
  // strict JSON (parser differentials): refused, naming where
  const strict = {
    'duplicate key': ['{"items": [], "items": [{}]}', 'items'],
    'duplicate nested key': ['{"items": [{"payload": {"a": 1, "a": 2}}]}', 'items[0].payload.a'],
    'leading zero': ['{"items": [{"priority": 01}]}', 'items[0].priority'],
    'number beyond a double': ['{"items": [{"priority": 1e999}]}', 'items[0].priority'],
    'raw control character': ['{"items": [{"item_identifier": "a\tb"}]}', 'items[0].item_identifier'],
  };
  for (const [what, [raw, field]] of Object.entries(strict)) await call('registerItems', { expect: 400, error: 'invalid_json', field, raw, label: what });
  await call('registerItems', { expect: 400, error: 'invalid_json', raw: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), label: 'invalid UTF-8' });
  // strict input: an unknown member is refused (naming it), never ignored
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'whatever', json: { items: [mk('a1')], whatever: { x: 1 } }, label: 'unknown field' });
  await call('registerItems', { expect: 400, error: 'invalid_field', field: 'items[0].priorty', json: { items: [{ ...mk('a1'), priorty: 1 }] }, label: 'unknown item field' });
  // null for an optional field is absent (info.description says so; the request schemas do
  // not allow null, so the schema check is off for this one)
  await call('registerItems', { expect: 200, json: { items: [mk('a1', { payload: null, priority: null })] }, label: 'null is absent', specAccepts: false });

  // lookup
  const lk = await call('lookupItems', { expect: 200, json: { flow_step_id: FS, source_type: 'rss', item_identifiers: ['https://ex.org/a1', 'https://ex.org/nope', 'https://ex.org/a2'] } });
  check(lk.body.items.length === 2, 'lookupItems', `expected 2 known items, got ${snip(lk.body)}`);
  await call('lookupItems', { expect: 200, json: { flow_step_id: FS, source_type: 'rss', item_identifiers: [] }, label: 'none' });
  await call('lookupItems', { expect: 400, error: 'missing_field', field: 'item_identifiers', json: { flow_step_id: FS, source_type: 'rss' } });
  await call('lookupItems', { expect: 400, error: 'missing_field', field: 'flow_step_id', json: { source_type: 'rss', item_identifiers: [] } });
  await call('lookupItems', { expect: 400, error: 'invalid_field', field: 'item_identifiers[1]', json: { flow_step_id: FS, source_type: 'rss', item_identifiers: ['a', ''] } });
  await call('lookupItems', { expect: 400, error: 'invalid_field', field: 'item_identifiers', json: { flow_step_id: FS, source_type: 'rss', item_identifiers: Array.from({ length: 1001 }, (_, i) => `i${i}`) } });

  // list
  const all = await call('listItems', { token: 'reader', expect: 200, query: { flow_step_id: FS } });
  check(all.body.items.length === 9 && all.body.next_after === null, 'listItems', `expected 9 items and next_after null, got ${all.body.items.length}, ${all.body.next_after}`);
  const page = await call('listItems', { expect: 200, query: { flow_step_id: FS, limit: 3 } });
  check(page.body.next_after !== null, 'listItems', 'a full page has next_after null');
  await call('listItems', { expect: 200, query: { flow_step_id: FS, limit: 3, after: page.body.next_after, state: 'available' } });
  await call('listItems', { expect: 200, label: 'no filter' });
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'state', query: { state: 'bogus' } });
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'limit', query: { limit: 0 } });
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'limit', query: { limit: 501 } });
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'limit', query: { limit: 'ten' } });
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'after', query: { after: -1 } });
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'flow_step_id', query: { flow_step_id: 'f'.repeat(201) } });
  // an argument the endpoint does not declare is refused, never ignored (a misspelt filter would list everything)
  await call('listItems', { expect: 400, error: 'invalid_query', field: 'sate', query: { sate: 'failed' } });
  await call('listItems', { expect: 400, error: 'invalid_query', field: 'flow_step_id', query: { flow_step_id: 'a\nb' } });

  // one
  const one = await call('getItem', { expect: 200, params: { item_id: ctx.items[0].id } });
  check(one.body.item.payload && one.body.item.payload.title === 'A', 'getItem', 'payload not returned');
  check(one.body.transitions.length === 1 && one.body.transitions[0].cause === 'register', 'getItem', 'expected one register transition');
  await call('getItem', { expect: 404, error: 'not_found', params: { item_id: NO_SUCH_ID } });
  await call('getItem', { expect: 404, error: 'not_found', params: { item_id: 'abc' } });
  await call('getItem', { expect: 404, error: 'not_found', params: { item_id: 0 } });
}

async function claims() {
  // the main flow: a1..a7 (a1 first, by priority); new1 and idem1 stay available
  const cl = await call('claimItems', { expect: 200, json: { flow_step_id: FS, worker_id: 'contract@1', limit: 7, lease_seconds: 600 } });
  ctx.claims = cl.body.claims;
  check(cl.body.claims.length === 7, 'claimItems', `expected 7 claims, got ${cl.body.claims.length}`);
  check(cl.body.claims[0].item.priority === 5, 'claimItems', 'highest priority is not claimed first');
  await call('claimItems', { expect: 200, json: { flow_step_id: FS_EMPTY, worker_id: 'contract@1' }, label: 'nothing claimable' });
  // Idempotency-Key
  await call('registerItems', { expect: 200, json: { items: [1, 2].map((i) => ({ flow_step_id: FS_IDEM, source_type: 'rss', item_identifier: `i${i}` })) } });
  const key = `claim-${RUN}`;
  const req = { flow_step_id: FS_IDEM, worker_id: 'contract@2', limit: 1 };
  const first = await call('claimItems', { expect: 200, headers: { 'Idempotency-Key': key }, json: req, label: 'idempotent first' });
  const rep = await call('claimItems', { expect: 200, headers: { 'Idempotency-Key': key }, json: req, label: 'idempotent replay' });
  check(rep.headers['idempotent-replayed'] === 'true', 'claimItems', 'replay without Idempotent-Replayed: true');
  check(isDeepStrictEqual(rep.body, first.body), 'claimItems', 'replay body differs from the first answer');
  await call('claimItems', { expect: 422, error: 'idempotency_key_reused', field: 'Idempotency-Key', headers: { 'Idempotency-Key': key }, json: { ...req, limit: 2 } });
  await call('claimItems', { expect: 400, error: 'invalid_field', field: 'Idempotency-Key', headers: { 'Idempotency-Key': 'k'.repeat(256) }, json: req });
  // validation
  await call('claimItems', { expect: 400, error: 'missing_field', field: 'worker_id', json: { flow_step_id: FS } });
  await call('claimItems', { expect: 400, error: 'missing_field', field: 'flow_step_id', label: 'empty body' });
  await call('claimItems', { expect: 400, error: 'invalid_field', field: 'limit', json: { flow_step_id: FS, worker_id: 'w', limit: 0 } });
  await call('claimItems', { expect: 400, error: 'invalid_field', field: 'limit', json: { flow_step_id: FS, worker_id: 'w', limit: 101 } });
  await call('claimItems', { expect: 400, error: 'invalid_field', field: 'lease_seconds', json: { flow_step_id: FS, worker_id: 'w', lease_seconds: 4 } });
  await call('claimItems', { expect: 400, error: 'invalid_field', field: 'worker_id', json: { flow_step_id: FS, worker_id: 'w'.repeat(201) } });
  await call('claimItems', { expect: 400, error: 'invalid_field', field: 'flow_step_id', json: { flow_step_id: 7, worker_id: 'w' } });
  // a long-poll claim answers the same shape (empty at its deadline); bad waits name the field
  const t0 = Date.now();
  const waited = await call('claimItems', { expect: 200, json: { flow_step_id: FS_EMPTY, worker_id: 'contract@lp', wait_seconds: 1 }, label: 'long-poll, nothing' });
  check(waited.body.claims.length === 0 && Date.now() - t0 >= 900, 'claimItems wait_seconds', `answered after ${Date.now() - t0} ms: ${snip(waited.body)}`);
  for (const bad of [-1, 21, 1.5, 'x']) {
    await call('claimItems', { expect: 400, error: 'invalid_field', field: 'wait_seconds', json: { flow_step_id: FS, worker_id: 'w', wait_seconds: bad } });
  }

  // heartbeat
  const j = ctx.claims[0];
  const hb = await call('heartbeatJob', { expect: 200, params: { job_id: j.job_id }, json: { claim_token: j.claim_token, lease_seconds: 900 } });
  check(hb.body.lease_expires_at > j.lease_expires_at, 'heartbeatJob', 'the lease did not move');
  await call('heartbeatJob', { expect: 200, params: { job_id: j.job_id }, json: { claim_token: j.claim_token }, label: 'default lease' });
  await call('heartbeatJob', { expect: 409, error: 'claim_lost', params: { job_id: j.job_id }, json: { claim_token: BAD_TOKEN } });
  await call('heartbeatJob', { expect: 400, error: 'invalid_field', field: 'claim_token', params: { job_id: j.job_id }, json: { claim_token: 'not-a-uuid' } });
  await call('heartbeatJob', { expect: 400, error: 'missing_field', field: 'claim_token', params: { job_id: j.job_id }, json: {} });
  await call('heartbeatJob', { expect: 400, error: 'invalid_field', field: 'lease_seconds', params: { job_id: j.job_id }, json: { claim_token: j.claim_token, lease_seconds: 86401 } });
  await call('heartbeatJob', { expect: 404, error: 'not_found', params: { job_id: NO_SUCH_ID }, json: { claim_token: j.claim_token } });
  await call('heartbeatJob', { expect: 404, error: 'not_found', params: { job_id: 'x1' }, json: { claim_token: j.claim_token } });
}

async function outcomes() {
  const [j1, j2, , , , j6, j7] = ctx.claims;
  // tool failures on j1
  const d = await call('reportToolFailure', { expect: 200, params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'skills__tldr', args: { url: 'https://ex.org/a1' }, error: 'iteration_cap', kind: 'deterministic' } });
  check(d.body.retryable === false && d.body.repeat_count === 1 && d.body.error === 'iteration_cap', 'tool failure', `deterministic envelope wrong: ${snip(d.body)}`);
  for (let n = 1; n <= 3; n++) {
    const args = n % 2 ? { b: 1, a: [1, { z: 1, y: 2 }] } : { a: [1, { y: 2, z: 1 }], b: 1 };
    const t = await call('reportToolFailure', { expect: 200, params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'fetch', args, error: 'HTTP 503 from upstream', kind: 'transient' }, label: `transient #${n}` });
    check(t.body.repeat_count === n && t.body.retryable === (n < 3), 'tool failure', `transient #${n}: ${snip(t.body)}`);
  }
  const u = await call('reportToolFailure', { expect: 200, params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'search', error: 'connection reset by peer' }, label: 'unknown kind' });
  check(u.body.kind === 'transient', 'tool failure', `'connection reset' was not classified transient: ${snip(u.body)}`);
  check(u.body.tool_result?.terminal === false && u.body.tool_result?.text === `'search' failed (transient). ${u.body.hint}`, 'tool failure tool_result', snip(u.body.tool_result));
  await call('reportToolFailure', { expect: 400, error: 'missing_field', field: 'tool', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, error: 'x' } });
  await call('reportToolFailure', { expect: 400, error: 'missing_field', field: 'error', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'x' } });
  await call('reportToolFailure', { expect: 400, error: 'invalid_field', field: 'error', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'x', error: '' } });
  await call('reportToolFailure', { expect: 400, error: 'invalid_field', field: 'kind', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'x', error: 'e', kind: 'flaky' } });
  await call('reportToolFailure', { expect: 400, error: 'invalid_field', field: 'required', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'x', error: 'e', required: 'yes' } });
  await call('reportToolFailure', { expect: 409, error: 'claim_lost', params: { job_id: j1.job_id }, json: { claim_token: BAD_TOKEN, tool: 'x', error: 'e' } });
  await call('reportToolFailure', { expect: 404, error: 'not_found', params: { job_id: NO_SUCH_ID }, json: { claim_token: j1.claim_token, tool: 'x', error: 'e' } });
  await call('reportToolSuccess', { expect: 200, params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'skills__tldr' } });
  await call('reportToolSuccess', { expect: 400, error: 'missing_field', field: 'tool', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token } });
  await call('reportToolSuccess', { expect: 400, error: 'invalid_field', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'x', succeeded: true } });
  await call('reportToolSuccess', { expect: 409, error: 'claim_lost', params: { job_id: j1.job_id }, json: { claim_token: BAD_TOKEN, tool: 'x' } });
  await call('reportToolSuccess', { expect: 404, error: 'not_found', params: { job_id: NO_SUCH_ID }, json: { claim_token: j1.claim_token, tool: 'x' } });

  // dispositions: complete j1, replay, different call, heartbeat and tool failure afterwards
  const done = { claim_token: j1.claim_token, disposition: 'complete', engine_data: { post_id: 42 } };
  const c1 = await call('reportDisposition', { expect: 200, params: { job_id: j1.job_id }, json: done });
  check(c1.body.replayed === false && c1.body.item.state === 'processed' && c1.body.job.status === 'completed', 'complete', snip(c1.body));
  check(c1.body.tool_result?.text === 'Recorded: completed. The item is processed. Stop now.' && c1.body.tool_result?.terminal === true, 'complete tool_result', snip(c1.body.tool_result));
  const c2 = await call('reportDisposition', { expect: 200, params: { job_id: j1.job_id }, json: { engine_data: { post_id: 42 }, disposition: 'complete', claim_token: j1.claim_token }, label: 'identical (keys reordered)' });
  check(c2.body.replayed === true, 'complete replay', `replayed is not true: ${snip(c2.body)}`);
  check(JSON.stringify(c2.body.tool_result) === JSON.stringify(c1.body.tool_result), 'complete replay', `the replay's tool_result differs: ${snip(c2.body.tool_result)}`);
  await call('reportDisposition', { expect: 409, error: 'job_finalized', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, disposition: 'reject_source', reason_code: 'spam' } });
  await call('heartbeatJob', { expect: 409, error: 'job_finalized', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token } });
  await call('reportToolFailure', { expect: 409, error: 'job_finalized', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, tool: 'x', error: 'e' } });
  await call('reportSessionOutcome', { expect: 409, error: 'job_finalized', params: { job_id: j1.job_id }, json: { claim_token: j1.claim_token, session: SUCCESS_SESSION } });

  // j2: a required tool failed, so reject_source is refused unless forced
  await call('reportToolFailure', { expect: 200, params: { job_id: j2.job_id }, json: { claim_token: j2.claim_token, tool: 'wp_update', error: 'HTTP 500', kind: 'deterministic', required: true } });
  await call('reportDisposition', { expect: 409, error: 'tool_failure_pending', params: { job_id: j2.job_id }, json: { claim_token: j2.claim_token, disposition: 'reject_source', reason_code: 'too_thin' } });
  // ... and complete too: the required tool was given up (retryable: false), nothing it should have written was written
  await call('reportDisposition', { expect: 409, error: 'tool_failure_pending', field: 'disposition', params: { job_id: j2.job_id }, json: { claim_token: j2.claim_token, disposition: 'complete' }, label: 'complete after a required tool was given up' });
  const forced = await call('reportDisposition', { expect: 200, params: { job_id: j2.job_id }, json: { claim_token: j2.claim_token, disposition: 'reject_source', reason_code: 'too_thin', reason: 'one-line post', force: true } });
  check(forced.body.item.state === 'rejected', 'forced reject_source', snip(forced.body));
  // the briefing of a job (reader), and of no job
  const br = await call('getJobBriefing', { expect: 200, params: { job_id: j2.job_id } });
  check(br.body.job_id === j2.job_id && /^Attempt \d+\./.test(br.body.briefing) && Array.isArray(br.body.attempts), 'briefing', snip(br.body));
  await call('getJobBriefing', { expect: 404, error: 'not_found', params: { job_id: NO_SUCH_ID } });

  // the other dispositions
  const [, , j3, j4, j5] = ctx.claims;
  const df = await call('reportDisposition', { expect: 200, params: { job_id: j3.job_id }, json: { claim_token: j3.claim_token, disposition: 'defer_item', reason_code: 'tool_error', reason: 'fetch timed out', retry_after_seconds: 0 } });
  check(df.body.item.state === 'deferred' && df.body.job.status === 'deferred', 'defer_item', snip(df.body));
  check(/^Recorded: deferred \(tool_error\)\. The source stays eligible and is retried in about \d+ s\. Stop now\.$/.test(df.body.tool_result?.text), 'defer_item tool_result', snip(df.body.tool_result));
  const fl = await call('reportDisposition', { expect: 200, params: { job_id: j4.job_id }, json: { claim_token: j4.claim_token, disposition: 'fail', error: 'upsert failed: token=abc', retryable: false } });
  check(fl.body.item.state === 'failed' && fl.body.job.reason_code === 'engine_error', 'fail', snip(fl.body));
  const sk = await call('reportDisposition', { expect: 200, params: { job_id: j5.job_id }, json: { claim_token: j5.claim_token, disposition: 'skip_item', reason: 'tool-error' } });
  check(sk.body.deprecated === true && sk.body.mapped_to === 'defer_item' && sk.body.disposition === 'defer_item', 'skip_item', snip(sk.body));

  // refused dispositions, on the live j7
  const dj = (json, extra) => call('reportDisposition', { params: { job_id: j7.job_id }, json: { claim_token: j7.claim_token, ...json }, ...extra });
  await dj({ disposition: 'reject_source' }, { expect: 400, error: 'missing_field', field: 'reason_code' });
  await dj({ disposition: 'reject_source', reason_code: 'boring' }, { expect: 400, error: 'invalid_field', field: 'reason_code' });
  await dj({ disposition: 'defer_item', reason_code: 'too_thin' }, { expect: 400, error: 'invalid_field', field: 'reason_code' });
  await dj({ disposition: 'defer_item', reason_code: 'other', retry_after_seconds: -1 }, { expect: 400, error: 'invalid_field', field: 'retry_after_seconds' });
  await dj({ disposition: 'defer_item', reason_code: 'other', manual_review: 1 }, { expect: 400, error: 'invalid_field', field: 'manual_review' });
  await dj({ disposition: 'fail' }, { expect: 400, error: 'missing_field', field: 'error' });
  await dj({ disposition: 'fail', error: 'e'.repeat(4001) }, { expect: 400, error: 'invalid_field', field: 'error' });
  await dj({ disposition: 'park' }, { expect: 400, error: 'invalid_field', field: 'disposition' });
  await dj({}, { expect: 400, error: 'missing_field', field: 'disposition' });
  await dj({ disposition: 'complete', reason: 'r'.repeat(2001) }, { expect: 400, error: 'invalid_field', field: 'reason' });
  await dj({ disposition: 'complete', engine_data: [1] }, { expect: 400, error: 'invalid_field', field: 'engine_data' });
  await dj({ disposition: 'complete', force: 'yes' }, { expect: 400, error: 'invalid_field', field: 'force' });
  // the rejection lint: a reason that reads like a tooling failure; evidence too long
  // tooling words alone never refuse (nothing on this item's record backs them): reason_code other still needs evidence
  await dj({ disposition: 'reject_source', reason_code: 'other', reason: 'tool-error' }, { expect: 400, error: 'missing_field', field: 'evidence', specRejects: false });
  await dj({ disposition: 'reject_source', reason_code: 'spam', evidence: 'x'.repeat(501) }, { expect: 400, error: 'invalid_field', field: 'evidence' });
  // strict evidence, for a moment on the main flow step: missing, then not quoted from the payload
  await call('configureFlowStep', { expect: 200, params: { flow_step_id: FS }, json: { strict_evidence: true }, label: 'strict evidence on' });
  await dj({ disposition: 'reject_source', reason_code: 'spam' }, { expect: 400, error: 'missing_field', field: 'evidence', specRejects: false }); // the flow step's setting, not the schema, requires it
  await dj({ disposition: 'reject_source', reason_code: 'spam', evidence: 'not in this payload' }, { expect: 409, error: 'evidence_not_found', field: 'evidence' });
  await call('configureFlowStep', { expect: 200, params: { flow_step_id: FS }, json: { strict_evidence: false }, label: 'strict evidence off' });
  await call('reportDisposition', { expect: 400, error: 'invalid_field', field: 'claim_token', params: { job_id: j7.job_id }, json: { claim_token: 'x', disposition: 'complete' } });
  await call('reportDisposition', { expect: 400, error: 'missing_field', field: 'claim_token', params: { job_id: j7.job_id }, label: 'empty body' });
  await call('reportDisposition', { expect: 409, error: 'claim_lost', params: { job_id: j7.job_id }, json: { claim_token: BAD_TOKEN, disposition: 'complete' } });
  await call('reportDisposition', { expect: 404, error: 'not_found', params: { job_id: NO_SUCH_ID }, json: { claim_token: j7.claim_token, disposition: 'complete' } });

  // session outcome on j6: record only, then apply, replay, a different report
  const rec = await call('reportSessionOutcome', { expect: 200, params: { job_id: j6.job_id }, json: { claim_token: j6.claim_token, session: RETRY_SESSION, apply: false } });
  check(rec.body.job.status === 'processing' && rec.body.item.state === 'claimed' && rec.body.adjudication.outcome === 'retriable', 'apply: false', snip(rec.body));
  const body = { claim_token: j6.claim_token, session: SUCCESS_SESSION };
  const ap = await call('reportSessionOutcome', { expect: 200, params: { job_id: j6.job_id }, json: body });
  check(ap.body.replayed === false && ap.body.adjudication.outcome === 'succeeded' && ap.body.item.state === 'processed', 'session outcome', snip(ap.body));
  const re = await call('reportSessionOutcome', { expect: 200, params: { job_id: j6.job_id }, json: body, label: 'identical' });
  check(re.body.replayed === true, 'session outcome replay', `replayed is not true: ${snip(re.body)}`);
  await call('reportSessionOutcome', { expect: 409, error: 'job_finalized', params: { job_id: j6.job_id }, json: { claim_token: j6.claim_token, session: RETRY_SESSION } });
  const so = (json, extra) => call('reportSessionOutcome', { params: { job_id: j7.job_id }, json: { claim_token: j7.claim_token, ...json }, ...extra });
  await so({}, { expect: 400, error: 'missing_field', field: 'session' });
  await so({ session: 'done' }, { expect: 400, error: 'invalid_field', field: 'session' });
  await so({ session: { returncode: 0 } }, { expect: 400, error: 'missing_field', field: 'session.stdout' });
  await so({ session: { stdout: '', parsed: {} } }, { expect: 400, error: 'invalid_field', field: 'session.parsed' });
  await so({ session: { ...SUCCESS_SESSION, termination: 'crashed' } }, { expect: 400, error: 'invalid_field', field: 'session.termination' });
  await so({ session: SUCCESS_SESSION, apply: 'yes' }, { expect: 400, error: 'invalid_field', field: 'apply' });
  await call('reportSessionOutcome', { expect: 409, error: 'claim_lost', params: { job_id: j7.job_id }, json: { claim_token: BAD_TOKEN, session: SUCCESS_SESSION } });
  await call('reportSessionOutcome', { expect: 404, error: 'not_found', params: { job_id: NO_SUCH_ID }, json: { claim_token: j7.claim_token, session: SUCCESS_SESSION } });

  // pure adjudication
  const a1 = await call('adjudicateSession', { expect: 200, json: { session: SUCCESS_SESSION } });
  check(a1.body.adjudication.outcome === 'succeeded', 'adjudicateSession', snip(a1.body));
  const a2 = await call('adjudicateSession', { expect: 200, json: { session: RETRY_SESSION } });
  check(a2.body.adjudication.outcome === 'retriable' && a2.body.adjudication.retry_reason === 'early_stop', 'adjudicateSession', snip(a2.body));
  const a3 = await call('adjudicateSession', {
    expect: 200,
    json: { session: { parsed: { subtype: 'success', result: [{ type: 'text', text: 'Done.' }, { type: 'image' }], write_call_count: 1 }, expected_output_patterns: ['(unclosed'], write_behavior: { mode: 'always' } } },
    label: 'parsed, invalid regex',
  });
  check(a3.body.adjudication.warnings.length >= 1, 'adjudicateSession', `an invalid regex gave no warning: ${snip(a3.body)}`);
  await call('adjudicateSession', { expect: 400, error: 'missing_field', field: 'session', json: {} });
  await call('adjudicateSession', { expect: 400, error: 'invalid_field', field: 'session.parsed', json: { session: { stdout: 'x', parsed: {} } } });
  await call('adjudicateSession', { expect: 400, error: 'invalid_field', field: 'session.returncode', json: { session: { stdout: 'x', returncode: 1.5 } } });
  await call('adjudicateSession', { expect: 400, error: 'invalid_field', field: 'session.parsed.errors[1]', json: { session: { parsed: { errors: ['a', 2] } } } });
  // limits (docs/operations.md, "Limits"): too many patterns, and a regex the matching budget cuts off
  await call('adjudicateSession', { expect: 400, error: 'invalid_field', field: 'session.expected_output_patterns', json: { session: { stdout: 'x', expected_output_patterns: Array(33).fill('x') } }, label: 'too many patterns' });
  const redos = { returncode: 0, termination: 'completed', channel: 'channel_b', parsed: { subtype: 'success', result: ('a'.repeat(14) + '!').repeat(1200) }, expected_output_patterns: Array(8).fill('(a+)+c|b') };
  await call('adjudicateSession', { expect: 422, error: 'match_budget_exhausted', json: { session: redos }, label: 'regex budget' });
  await so({ session: redos }, { expect: 422, error: 'match_budget_exhausted', label: 'regex budget' });
}

async function reads() {
  const [j1, , , , , j6] = ctx.claims;
  const g = await call('getJob', { expect: 200, params: { job_id: j1.job_id } });
  check(g.body.job.tool_failures.count === 5 && g.body.job.engine_data.post_id === 42, 'getJob', `tool failures/engine_data wrong: ${snip(g.body.job)}`);
  check(!('claim_token' in g.body.job), 'getJob', 'a read returned the claim token');
  const g6 = await call('getJob', { expect: 200, params: { job_id: j6.job_id } });
  check(g6.body.job.adjudication && g6.body.job.adjudication.outcome === 'succeeded', 'getJob', 'adjudication not stored');
  await call('getJob', { expect: 404, error: 'not_found', params: { job_id: NO_SUCH_ID } });
  await call('getJob', { expect: 404, error: 'not_found', params: { job_id: '-1' } });

  const all = await call('listJobs', { expect: 200, query: { flow_step_id: FS } });
  check(all.body.jobs.length === 7, 'listJobs', `expected 7 jobs, got ${all.body.jobs.length}`);
  const p = await call('listJobs', { expect: 200, query: { flow_step_id: FS, limit: 2 } });
  check(p.body.next_after !== null, 'listJobs', 'a full page has next_after null');
  await call('listJobs', { expect: 200, query: { flow_step_id: FS, status: 'completed', since: '2000-01-02T03:04:05Z', after: p.body.next_after, limit: 500 } });
  await call('listJobs', { expect: 200, query: { since: '2000-01-02T03:04:05.123456+01:00' }, label: 'since with offset' });
  await call('listJobs', { expect: 400, error: 'invalid_field', field: 'since', query: { since: 'yesterday' } });
  await call('listJobs', { expect: 400, error: 'invalid_field', field: 'status', query: { status: 'done' } });
  await call('listJobs', { expect: 400, error: 'invalid_field', field: 'limit', query: { limit: 501 } });
  await call('listJobs', { expect: 400, error: 'invalid_field', field: 'after', query: { after: 'x' } });
  await call('listJobs', { expect: 400, error: 'invalid_field', field: 'flow_step_id', query: { flow_step_id: 'f'.repeat(201) } });

  for (const format of [undefined, 'openai', 'anthropic', 'mcp']) {
    const t = await call('getToolDefinitions', { expect: 200, query: format ? { format } : undefined, label: format || 'default' });
    check(t.body.format === (format || 'openai') && t.body.tools.length === 5, 'getToolDefinitions', `format ${format}: ${snip(t.body)}`);
  }
  await call('getToolDefinitions', { expect: 400, error: 'invalid_field', field: 'format', query: { format: 'xml' } });

  const s = await call('getStats', { expect: 200 });
  check(s.body.flow_steps.some((f) => f.flow_step_id === FS), 'getStats', 'the flow step is missing');
  const s1 = await call('getStats', { expect: 200, query: { flow_step_id: FS } });
  check(s1.body.flow_steps.length === 1, 'getStats', `filter by flow_step_id gave ${s1.body.flow_steps.length} flow steps`);
  await call('getStats', { expect: 400, error: 'invalid_field', field: 'flow_step_id', query: { flow_step_id: 'f'.repeat(201) } });

  const f = await call('listFlowSteps', { expect: 200 });
  check(f.body.flow_steps.some((x) => x.flow_step_id === FS), 'listFlowSteps', 'the flow step is missing');
}

// Tooling incidents (docs/agent-safety.md): a flow step of its own whose minimum is one
// item, so one deterministic failure opens an incident; the envelope names it, reject_source
// answers 409 tooling_incident_open, the three operations answer their documented shapes.
async function incidents() {
  const fsInc = `${FS}_incident`;
  await call('configureFlowStep', { expect: 200, params: { flow_step_id: fsInc }, json: { incident_min_items: 1 } });
  await call('registerItems', { expect: 200, json: { items: [1, 2].map((i) => ({ flow_step_id: fsInc, source_type: 'rss', item_identifier: `https://ex.org/inc${i}` })) } });
  const cl = await call('claimItems', { expect: 200, json: { flow_step_id: fsInc, worker_id: 'contract@inc', limit: 2 } });
  const [a, b] = cl.body.claims;
  const env = await call('reportToolFailure', { expect: 200, params: { job_id: a.job_id }, json: { claim_token: a.claim_token, tool: 'wiki_upsert', error: "target_path '/srv/wiki/1.md' must stay inside root" }, label: 'opens an incident' });
  check(env.body.incident && env.body.incident.tool === 'wiki_upsert', 'reportToolFailure', `no incident member: ${snip(env.body)}`);
  await call('reportDisposition', { expect: 409, error: 'tooling_incident_open', params: { job_id: b.job_id }, json: { claim_token: b.claim_token, disposition: 'reject_source', reason_code: 'other', reason: 'tool-error' } });
  const list = await call('listToolIncidents', { expect: 200, query: { flow_step_id: fsInc, state: 'open' } });
  check(list.body.tool_incidents.length === 1, 'listToolIncidents', snip(list.body));
  const id = list.body.tool_incidents[0].id;
  await call('listToolIncidents', { expect: 200, query: { limit: 1 }, label: 'one page' });
  await call('listToolIncidents', { expect: 400, error: 'invalid_field', field: 'state', query: { state: 'closed' } });
  await call('listToolIncidents', { expect: 400, error: 'invalid_field', field: 'limit', query: { limit: 0 } });
  const one = await call('getToolIncident', { expect: 200, params: { incident_id: id } });
  check(one.body.tool_incident.affected_items.length === 1, 'getToolIncident', snip(one.body));
  await call('getToolIncident', { expect: 404, error: 'not_found', params: { incident_id: NO_SUCH_ID } });
  await call('resolveToolIncident', { expect: 400, error: 'invalid_field', field: 'bogus', params: { incident_id: id }, json: { bogus: 1 } });
  await call('resolveToolIncident', { expect: 400, error: 'invalid_field', field: 'requeue_items', params: { incident_id: id }, json: { requeue_items: 'yes' } });
  await call('resolveToolIncident', { expect: 404, error: 'not_found', params: { incident_id: NO_SUCH_ID }, json: {} });
  const res = await call('resolveToolIncident', { expect: 200, params: { incident_id: id }, json: { requeue_items: true, reason: 'fixed' } });
  check(res.body.tool_incident.state === 'resolved', 'resolveToolIncident', snip(res.body));
  await call('resolveToolIncident', { expect: 409, error: 'invalid_transition', params: { incident_id: id }, label: 'resolved already' });
}

async function admin() {
  const j7 = ctx.claims[6];
  await call('requeueItem', { expect: 409, error: 'invalid_transition', params: { item_id: j7.item.id }, label: 'claimed item' });
  const [j1] = ctx.claims;
  const r = await call('requeueItem', { expect: 200, params: { item_id: j1.item.id }, label: 'no body' });
  check(r.body.item.state === 'available', 'requeueItem', snip(r.body));
  await call('requeueItem', { expect: 200, params: { item_id: j1.item.id }, json: { reason: 'again', reset_budgets: true }, label: 'with body' });
  await call('requeueItem', { expect: 200, params: { item_id: j1.item.id }, json: {}, label: 'empty object' });
  await call('requeueItem', { expect: 400, error: 'invalid_field', field: 'reason', params: { item_id: j1.item.id }, json: { reason: 5 } });
  await call('requeueItem', { expect: 400, error: 'invalid_field', field: 'reset_budgets', params: { item_id: j1.item.id }, json: { reset_budgets: 'no' } });
  await call('requeueItem', { expect: 404, error: 'not_found', params: { item_id: NO_SUCH_ID } });
  await call('requeueItem', { expect: 404, error: 'not_found', params: { item_id: '1e3' } });

  const b = await call('requeueItems', { expect: 200, json: { flow_step_id: FS, state: 'rejected', reason: 'second look' } });
  check(b.body.requeued === 1, 'requeueItems', `expected 1 rejected item requeued, got ${snip(b.body)}`);
  const b2 = await call('requeueItems', { expect: 200, json: { flow_step_id: FS, state: 'failed', reason_code: 'engine_error', limit: 10, reset_budgets: true } });
  check(b2.body.requeued === 1, 'requeueItems', `expected 1 failed item requeued, got ${snip(b2.body)}`);
  await call('requeueItems', { expect: 400, error: 'missing_field', field: 'state', json: { flow_step_id: FS } });
  await call('requeueItems', { expect: 400, error: 'missing_field', field: 'flow_step_id', label: 'empty body' });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'state', json: { flow_step_id: FS, state: 'claimed' } });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'limit', json: { flow_step_id: FS, state: 'failed', limit: 10001 } });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'reason_code', json: { flow_step_id: FS, state: 'failed', reason_code: '' } });

  // pause: claims come back empty; resume: they come back
  await call('registerItems', { expect: 200, json: { items: [{ flow_step_id: FS_PAUSE, source_type: 'rss', item_identifier: 'p1' }] } });
  const pz = await call('pauseFlowStep', { expect: 200, params: { flow_step_id: FS_PAUSE } });
  check(pz.body.flow_step.paused === true, 'pauseFlowStep', snip(pz.body));
  const none = await call('claimItems', { expect: 200, json: { flow_step_id: FS_PAUSE, worker_id: 'w' }, label: 'paused' });
  check(none.body.claims.length === 0, 'pause', 'a paused flow step gave a claim');
  const rs = await call('resumeFlowStep', { expect: 200, params: { flow_step_id: FS_PAUSE } });
  check(rs.body.flow_step.paused === false, 'resumeFlowStep', snip(rs.body));
  const some = await call('claimItems', { expect: 200, json: { flow_step_id: FS_PAUSE, worker_id: 'w' }, label: 'resumed' });
  check(some.body.claims.length === 1, 'resume', 'a resumed flow step gave no claim');
  await call('pauseFlowStep', { expect: 200, params: { flow_step_id: `${FS}_new` }, label: 'unknown flow step' });
  await call('pauseFlowStep', { expect: 400, error: 'invalid_field', field: 'flow_step_id', params: { flow_step_id: 'f'.repeat(201) } });
  await call('resumeFlowStep', { expect: 400, error: 'invalid_field', field: 'flow_step_id', params: { flow_step_id: 'f'.repeat(201) } });
  await call('pauseFlowStep', { expect: 404, error: 'not_found', params: { flow_step_id: 'f'.repeat(300) } });
  await call('resumeFlowStep', { expect: 404, error: 'not_found', params: { flow_step_id: 'f'.repeat(300) } });
  await call('pauseFlowStep', { expect: 200, params: { flow_step_id: FS_PAUSE }, json: {}, label: 'empty object body' });
  await call('pauseFlowStep', { expect: 400, error: 'invalid_json', params: { flow_step_id: FS_PAUSE }, raw: '[]', label: 'not an object' });
  await call('resumeFlowStep', { expect: 400, error: 'invalid_json', params: { flow_step_id: FS_PAUSE }, raw: '"x"', label: 'not an object' });
  await call('resumeFlowStep', { expect: 200, params: { flow_step_id: FS_PAUSE }, label: 'again' });

  // the agent-safety settings of a flow step (PATCH): partial changes, strict members
  const cf = await call('configureFlowStep', { expect: 200, params: { flow_step_id: FS_PAUSE }, json: { incident_min_items: 3, pause_on_incident: true } });
  check(cf.body.flow_step.incident_min_items === 3 && cf.body.flow_step.incident_window_minutes === 15 && cf.body.flow_step.paused === false, 'configureFlowStep', snip(cf.body));
  await call('configureFlowStep', { expect: 200, params: { flow_step_id: `${FS}_cfg` }, label: 'no body, unknown flow step' });
  await call('configureFlowStep', { expect: 400, error: 'invalid_field', field: 'incident_window_minutes', params: { flow_step_id: FS_PAUSE }, json: { incident_window_minutes: 0 } });
  await call('configureFlowStep', { expect: 400, error: 'invalid_field', field: 'paused', params: { flow_step_id: FS_PAUSE }, json: { paused: true }, label: 'unknown member' });
  await call('configureFlowStep', { expect: 404, error: 'not_found', params: { flow_step_id: 'f'.repeat(300) } });
  await call('configureFlowStep', { expect: 200, params: { flow_step_id: FS_PAUSE }, json: { incident_min_items: 5, pause_on_incident: false }, label: 'back to the defaults' });

  // finally let j7 go: a plain reject_source (no required tool failed in j7)
  const rj = await call('reportDisposition', { expect: 200, params: { job_id: j7.job_id }, json: { claim_token: j7.claim_token, disposition: 'reject_source', reason_code: 'duplicate' } });
  check(rj.body.item.state === 'rejected', 'reject_source', snip(rj.body));
}

// POST /v1/dispositions: per-entry answers in request order, replays through either endpoint,
// a malformed entry refuses the whole batch naming it.
async function batches() {
  const FS_BATCH = `${FS}_batch`;
  await call('registerItems', { expect: 200, json: { items: [1, 2, 3].map((i) => ({ flow_step_id: FS_BATCH, source_type: 'rss', item_identifier: `b${i}` })) } });
  const cl = await call('claimItems', { expect: 200, json: { flow_step_id: FS_BATCH, worker_id: 'contract@b', limit: 3, lease_seconds: 600 } });
  const [a, b, c] = cl.body.claims;
  const entries = [
    { job_id: b.job_id, claim_token: b.claim_token, disposition: 'reject_source', reason_code: 'spam', reason: 'casino links' },
    { job_id: a.job_id, claim_token: a.claim_token, disposition: 'complete', engine_data: { post_id: 5 } },
    { job_id: NO_SUCH_ID, claim_token: a.claim_token, disposition: 'complete' },
    { job_id: c.job_id, claim_token: BAD_TOKEN, disposition: 'complete' },
  ];
  const r1 = await call('reportDispositions', { expect: 200, json: { dispositions: entries } });
  const res = r1.body.results || [];
  check(res.length === 4 && res.every((r, i) => r.job_id === entries[i].job_id), 'batch order', snip(r1.body));
  check(res[0].status === 200 && res[0].item.state === 'rejected' && res[0].replayed === false, 'batch reject_source', snip(res[0]));
  check(res[1].status === 200 && res[1].item.state === 'processed' && res[1].job.engine_data.post_id === 5, 'batch complete', snip(res[1]));
  check(res[2].status === 404 && res[2].error === 'not_found', 'batch not_found', snip(res[2]));
  check(res[3].status === 409 && res[3].error === 'claim_lost' && res[3].retryable === false, 'batch claim_lost', snip(res[3]));
  for (const r of res.filter((x) => x.status !== 200)) {
    const row = ERROR_TABLE.get(r.error);
    check(row && row.status === r.status && row.hint === r.hint && row.retryable === r.retryable, 'batch entry error', `does not agree with the error table: ${snip(r)}`);
  }
  const r2 = await call('reportDispositions', { expect: 200, json: { dispositions: entries }, label: 'identical batch' });
  check(r2.body.results[0].replayed === true && r2.body.results[1].replayed === true, 'batch replay', snip(r2.body));
  const { job_id: _id, ...single } = entries[1];
  const r3 = await call('reportDisposition', { expect: 200, params: { job_id: a.job_id }, json: single, label: 'a batch entry replayed by the single call' });
  check(r3.body.replayed === true, 'batch replay', `the single call did not replay the entry: ${snip(r3.body)}`);
  await call('reportDisposition', { expect: 409, error: 'job_finalized', params: { job_id: b.job_id }, json: { claim_token: b.claim_token, disposition: 'complete' } });
  // malformed: nothing applied
  const live = { job_id: c.job_id, claim_token: c.claim_token, disposition: 'complete' };
  await call('reportDispositions', { expect: 400, error: 'missing_field', field: 'dispositions', label: 'empty body' });
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'dispositions', json: { dispositions: [] } });
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'dispositions', json: { dispositions: live } });
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'dispositions', json: { dispositions: Array.from({ length: 101 }, (_, i) => ({ ...live, job_id: i + 1 })) } });
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'dispositions[1]', json: { dispositions: [live, 7] } });
  await call('reportDispositions', { expect: 400, error: 'missing_field', field: 'dispositions[1].job_id', json: { dispositions: [live, { claim_token: c.claim_token, disposition: 'complete' }] } });
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'dispositions[0].job_id', json: { dispositions: [{ ...live, job_id: 0 }] } });
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'dispositions[1].reason_code', json: { dispositions: [live, { job_id: b.job_id, claim_token: b.claim_token, disposition: 'defer_item', reason_code: 'spam' }] } });
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'dispositions[0].claim_token', json: { dispositions: [{ ...live, claim_token: 'x' }] } });
  // (JSON Schema cannot say "each job_id once", so the document accepts what this refuses)
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'dispositions[1].job_id', json: { dispositions: [live, live] }, specRejects: false });
  const left = await call('getItem', { expect: 200, params: { item_id: c.item.id } });
  check(left.body.item.state === 'claimed', 'batch 400', `a refused batch changed the item: ${snip(left.body.item)}`);
  const r4 = await call('reportDispositions', { expect: 200, json: { dispositions: [live] }, label: 'one entry' });
  check(r4.body.results[0].status === 200 && r4.body.results[0].item.state === 'processed', 'batch of one', snip(r4.body));
}

// claim_next on both disposition endpoints: the claims as POST /v1/claims answers
// them, kept for the single call's replay, not for a batch; bad values name the field.
async function claimNext() {
  const F = `${FS}_next`;
  await call('registerItems', { expect: 200, json: { items: [1, 2, 3, 4, 5, 6].map((i) => ({ flow_step_id: F, source_type: 'rss', item_identifier: `n${i}` })) } });
  const cl = await call('claimItems', { expect: 200, json: { flow_step_id: F, worker_id: 'contract@n', limit: 1 } });
  const [j] = cl.body.claims;
  const body = { claim_token: j.claim_token, disposition: 'complete', claim_next: 2, lease_seconds: 120 };
  const r1 = await call('reportDisposition', { expect: 200, params: { job_id: j.job_id }, json: body, label: 'claim_next' });
  check(r1.body.claims?.length === 2 && r1.body.claims.every((c) => c.item.state === 'claimed'), 'claim_next', snip(r1.body));
  const r2 = await call('reportDisposition', { expect: 200, params: { job_id: j.job_id }, json: body, label: 'claim_next replayed' });
  check(r2.body.replayed === true && JSON.stringify(r2.body.claims) === JSON.stringify(r1.body.claims), 'claim_next replay', snip(r2.body));
  await call('reportDisposition', { expect: 400, error: 'invalid_field', field: 'claim_next', params: { job_id: j.job_id }, json: { ...body, claim_next: 101 } });
  await call('reportDisposition', { expect: 400, error: 'invalid_field', field: 'lease_seconds', params: { job_id: j.job_id }, json: { ...body, lease_seconds: 4 } });
  const [a, b] = r1.body.claims;
  const entries = [a, b].map((c) => ({ job_id: c.job_id, claim_token: c.claim_token, disposition: 'complete' }));
  const r3 = await call('reportDispositions', { expect: 200, json: { claim_next: 5, dispositions: entries }, label: 'claim_next' });
  check(r3.body.results.length === 2 && r3.body.claims?.length === 3, 'batch claim_next', snip(r3.body));
  const r4 = await call('reportDispositions', { expect: 200, json: { claim_next: 5, dispositions: entries }, label: 'claim_next replayed' });
  check(r4.body.results[0].replayed === true && r4.body.claims?.length === 0, 'batch claim_next replay', snip(r4.body));
  await call('reportDispositions', { expect: 400, error: 'invalid_field', field: 'claim_next', json: { claim_next: 'x', dispositions: entries } });
}

// A model's request_review, the review queue and an editor's answer, which the next
// claim carries.
async function reviews() {
  const F = `${FS}_review`;
  await call('registerItems', { expect: 200, json: { items: [{ flow_step_id: F, source_type: 'rss', item_identifier: 'q1' }] } });
  const c = (await call('claimItems', { expect: 200, json: { flow_step_id: F, worker_id: 'contract@review' } })).body.claims[0];
  const asked = await call('reportDisposition', { expect: 200, params: { job_id: c.job_id }, json: { claim_token: c.claim_token, disposition: 'request_review', question: 'Is it fair to cite?' } });
  check(asked.body.item.state === 'manual_review' && asked.body.item.defers === 0, 'request_review parks, no budget', snip(asked.body));
  const q = await call('listReviews', { expect: 200, query: { flow_step_id: F } });
  check(q.body.reviews[0]?.question === 'Is it fair to cite?' && q.body.flow_steps[0]?.questions === 1, 'listReviews', snip(q.body));
  await call('reviewItem', { expect: 400, error: 'missing_field', field: 'answer', params: { item_id: c.item.id }, json: { decision: 'retry' } });
  await call('reviewItem', { expect: 400, error: 'invalid_field', field: 'decision', params: { item_id: c.item.id }, json: { decision: 'later' } });
  await call('reviewItem', { expect: 404, error: 'not_found', params: { item_id: NO_SUCH_ID }, json: { decision: 'processed' } });
  const r = await call('reviewItem', { expect: 200, params: { item_id: c.item.id }, json: { decision: 'retry', answer: 'Yes.' } });
  check(r.body.item.state === 'available' && r.body.transition.cause === 'review', 'reviewItem', snip(r.body));
  await call('reviewItem', { expect: 409, error: 'invalid_transition', params: { item_id: c.item.id }, json: { decision: 'processed' }, label: 'not waiting' });
  const next = (await call('claimItems', { expect: 200, json: { flow_step_id: F, worker_id: 'contract@review' } })).body.claims[0];
  check(next.review?.answer === 'Yes.' && next.review?.question === 'Is it fair to cite?', 'the next claim carries the review', snip(next));
}

// Resolving parked items, dry runs, the change feed, whoami, the list filters and
// the console's files.
async function consoleOps() {
  const F = `${FS}_console`;
  await call('registerItems', { expect: 200, json: { items: ['r1', 'r2', 'f1'].map((i) => ({ flow_step_id: F, source_type: 'rss', item_identifier: i, max_attempts: i === 'f1' ? 1 : 5 })) } });
  const ids = {};
  for (const what of ['r1', 'r2', 'f1']) {
    const c = (await call('claimItems', { expect: 200, json: { flow_step_id: F, worker_id: 'contract@console', limit: 1 } })).body.claims[0];
    ids[c.item.item_identifier] = c.item.id;
    const body = what === 'f1' ? { disposition: 'fail', error: 'boom' } : { disposition: 'defer_item', reason_code: 'quality_gate', manual_review: true };
    await call('reportDisposition', { expect: 200, params: { job_id: c.job_id }, json: { claim_token: c.claim_token, ...body } });
  }
  // resolve one
  const r = await call('resolveItem', { expect: 200, params: { item_id: ids.r1 }, json: { outcome: 'rejected', reason: 'junk source', reason_code: 'spam' } });
  check(r.body.item.state === 'rejected' && r.body.transition.cause === 'resolve' && r.body.transition.actor === 'ops', 'resolveItem', snip(r.body));
  await call('resolveItem', { expect: 409, error: 'invalid_transition', params: { item_id: ids.r1 }, json: { outcome: 'processed', reason: 'again' }, label: 'not parked' });
  await call('resolveItem', { expect: 404, error: 'not_found', params: { item_id: NO_SUCH_ID }, json: { outcome: 'processed', reason: 'x' } });
  await call('resolveItem', { expect: 400, error: 'missing_field', field: 'reason', params: { item_id: ids.r2 }, json: { outcome: 'processed' } });
  await call('resolveItem', { expect: 400, error: 'missing_field', field: 'outcome', params: { item_id: ids.r2 }, label: 'no body' });
  await call('resolveItem', { expect: 400, error: 'invalid_field', field: 'outcome', params: { item_id: ids.r2 }, json: { outcome: 'done', reason: 'x' } });
  await call('resolveItem', { expect: 400, error: 'invalid_field', field: 'reason', params: { item_id: ids.r2 }, json: { outcome: 'processed', reason: '' } });
  await call('resolveItem', { expect: 400, error: 'invalid_field', field: 'reason_code', params: { item_id: ids.r2 }, json: { outcome: 'processed', reason: 'x', reason_code: '' } });
  // bulk, with a dry run first
  const sel = { flow_step_id: F, state: 'manual_review', outcome: 'processed', reason: 'published by hand' };
  const dry = await call('resolveItems', { expect: 200, json: { ...sel, dry_run: true } });
  check(dry.body.would_resolve === 1 && dry.body.item_ids[0] === ids.r2, 'resolveItems dry run', snip(dry.body));
  const done = await call('resolveItems', { expect: 200, json: { ...sel, set_reason_code: 'by_hand', limit: 10 } });
  check(done.body.resolved === 1 && done.body.item_ids[0] === ids.r2, 'resolveItems', snip(done.body));
  await call('resolveItems', { expect: 400, error: 'invalid_field', field: 'state', json: { ...sel, state: 'rejected' } });
  await call('resolveItems', { expect: 400, error: 'missing_field', field: 'outcome', json: { flow_step_id: F, state: 'failed', reason: 'x' } });
  await call('resolveItems', { expect: 400, error: 'missing_field', field: 'flow_step_id', label: 'empty body' });
  await call('resolveItems', { expect: 400, error: 'invalid_field', field: 'dry_run', json: { ...sel, dry_run: 'yes' } });
  await call('resolveItems', { expect: 400, error: 'invalid_field', field: 'limit', json: { ...sel, limit: 0 } });
  const rq = await call('requeueItems', { expect: 200, json: { flow_step_id: F, state: 'failed', dry_run: true } });
  check(rq.body.dry_run === true && rq.body.would_requeue === 1 && rq.body.item_ids[0] === ids.f1, 'requeueItems dry run', snip(rq.body));
  // the change feed
  const feed = await call('listTransitions', { token: 'reader', expect: 200, query: { flow_step_id: F } });
  check(feed.body.transitions.length === 11 && feed.body.transitions.every((t) => t.flow_step_id === F), 'listTransitions', `expected 11 transitions of ${F}: ${snip(feed.body)}`);
  const last = feed.body.transitions[feed.body.transitions.length - 1];
  check(last.cause === 'resolve' && feed.body.next_after === last.id, 'listTransitions', 'the last transition is not the bulk resolve, or next_after is not its id');
  const page = await call('listTransitions', { expect: 200, query: { after: 0, limit: 2 } });
  check(page.body.transitions.length === 2 && page.body.next_after === page.body.transitions[1].id, 'listTransitions', snip(page.body));
  const none = await call('listTransitions', { expect: 200, query: { after: page.body.last_id }, label: 'caught up' });
  check(none.body.transitions.length === 0 && none.body.next_after === page.body.last_id, 'listTransitions', `caught up: ${snip(none.body)}`);
  await call('listTransitions', { expect: 400, error: 'invalid_field', field: 'limit', query: { limit: 1001 } });
  await call('listTransitions', { expect: 400, error: 'invalid_field', field: 'after', query: { after: -1 } });
  await call('listTransitions', { expect: 400, error: 'invalid_field', field: 'flow_step_id', query: { flow_step_id: 'f'.repeat(201) } });
  // the lists' new filters and order
  const desc = await call('listItems', { expect: 200, query: { flow_step_id: F, order: 'desc', limit: 2 } });
  check(desc.body.items[0].id > desc.body.items[1].id && desc.body.next_after === desc.body.items[1].id, 'listItems desc', snip(desc.body));
  await call('listItems', { expect: 200, query: { flow_step_id: F, order: 'desc', after: desc.body.next_after }, label: 'desc next page' });
  const spam = await call('listItems', { expect: 200, query: { flow_step_id: F, reason_code: 'spam', worker_id: 'contract@console', order: 'asc' } });
  check(spam.body.items.length === 1 && spam.body.items[0].id === ids.r1, 'listItems reason_code', snip(spam.body));
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'order', query: { order: 'up' } });
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'worker_id', query: { worker_id: '' } });
  await call('listItems', { expect: 400, error: 'invalid_field', field: 'reason_code', query: { reason_code: 'r'.repeat(201) } });
  const jobs = await call('listJobs', { expect: 200, query: { item_id: ids.f1, worker_id: 'contract@console', reason_code: 'engine_error', order: 'desc' } });
  check(jobs.body.jobs.length === 1 && jobs.body.jobs[0].item_id === ids.f1, 'listJobs filters', snip(jobs.body));
  await call('listJobs', { expect: 200, query: { status: 'released' }, label: 'released status' });
  await call('listJobs', { expect: 400, error: 'invalid_field', field: 'item_id', query: { item_id: 0 } });
  await call('listJobs', { expect: 400, error: 'invalid_field', field: 'order', query: { order: 'DESC' } });
  // whoami
  for (const role of ['reader', 'worker', 'admin']) {
    const w = await call('whoami', { token: role, expect: 200, label: role });
    check(w.body.role === role, 'whoami', snip(w.body));
  }
  // the console's files
  const idx = await call('getConsole', { expect: 200 });
  check(idx.text.includes('<script type="module" src="app.js"'), 'getConsole', 'the page does not load app.js as a module');
  await call('getConsole', { expect: 304, headers: { 'If-None-Match': idx.headers.etag }, label: 'If-None-Match' });
  for (const a of ['app.js', 'app.css', 'favicon.svg', 'index.html']) await call('getConsoleAsset', { expect: 200, params: { asset: a } });
  const js = await call('getConsoleAsset', { expect: 200, params: { asset: 'app.js' }, label: 'again' });
  await call('getConsoleAsset', { expect: 304, params: { asset: 'app.js' }, headers: { 'If-None-Match': js.headers.etag }, label: 'If-None-Match' });
  await call('getConsoleAsset', { expect: 404, error: 'not_found', params: { asset: 'nope.js' } });
  const rd = await call('getConsoleRedirect', { expect: 308 });
  check(rd.headers.location === '/ui/', 'getConsoleRedirect', `Location ${rd.headers.location}`);
}

// Path parameters that route (their values do not matter before the handler runs).
const sampleParams = { item_id: 1, job_id: 1, flow_step_id: 'contract_matrix', asset: 'app.js', incident_id: 1, key: 'contract:matrix' };
// The answer an operation gives when nothing is wrong (200, or 308 for the /ui redirect).
const okStatus = (o) => Number(Object.keys(o.op.responses).find((k) => /^[23]\d\d$/.test(k)));
const paramsFor = (o) => Object.fromEntries(o.params.filter((p) => p.in === 'path').map((p) => [p.name, sampleParams[p.name]]));

// Flow control: limits per key and a provider's backoff.
async function limits() {
  const K = `model:${FS}`;
  const p = await call('putLimit', { expect: 200, params: { key: K }, json: { concurrency: 2, rate: { per: 'minute', count: 60, burst: 5 }, tokens_per_minute: 1000 } });
  check(p.body.limit.concurrency === 2 && p.body.limit.rate.burst === 5 && p.body.limit.in_flight === 0, 'putLimit', snip(p.body));
  await call('putLimit', { expect: 200, params: { key: K }, json: { concurrency: null, rate: null, tokens_per_minute: 500 }, label: 'replace' });
  await call('putLimit', { expect: 400, error: 'invalid_field', field: 'rate.per', params: { key: K }, json: { rate: { per: 'day', count: 1 } } });
  await call('putLimit', { expect: 400, error: 'invalid_field', field: 'key', params: { key: 'a b' }, label: 'bad key' });
  const g = await call('getLimit', { expect: 200, params: { key: K } });
  check(g.body.limit.tokens_per_minute === 500 && g.body.limit.rate === null, 'getLimit', snip(g.body));
  await call('getLimit', { expect: 404, error: 'not_found', params: { key: 'nope:nope' } });
  await call('getLimit', { expect: 400, error: 'invalid_field', field: 'key', params: { key: 'a b' } });
  const l = await call('listLimits', { expect: 200 });
  check(l.body.limits.some((x) => x.key === K), 'listLimits', snip(l.body));
  const b = await call('backoffLimit', { expect: 200, params: { key: K }, json: { retry_after_seconds: 5, reason: '429 Too Many Requests' } });
  check(b.body.limit.throttled === true && b.body.limit.backoff_streak === 1, 'backoffLimit', snip(b.body));
  await call('backoffLimit', { expect: 400, error: 'invalid_field', field: 'retry_after_seconds', params: { key: K }, json: { retry_after_seconds: 0 } });
  await call('deleteLimit', { expect: 200, params: { key: K } });
  await call('deleteLimit', { expect: 404, error: 'not_found', params: { key: K } });
  await call('deleteLimit', { expect: 400, error: 'invalid_field', field: 'key', params: { key: 'a b' } });
}

// Every operation: no token, an unknown token, every role below its least one.
async function releases() {
  const FS_REL = `${FS}_release`;
  await call('registerItems', { expect: 200, json: { items: [1, 2, 3].map((i) => ({ flow_step_id: FS_REL, source_type: 'rss', item_identifier: `r${i}` })) } });
  const cl = await call('claimItems', { expect: 200, json: { flow_step_id: FS_REL, worker_id: 'contract@r', limit: 3, lease_seconds: 600 } });
  const [a, b, c] = cl.body.claims;
  const body = { claim_token: a.claim_token, reason: 'max_execution_time is near' };
  const r = await call('releaseJob', { expect: 200, params: { job_id: a.job_id }, json: body });
  check(r.body.job.status === 'released' && r.body.item.state === 'available' && r.body.replayed === false, 'releaseJob', snip(r.body));
  const again = await call('releaseJob', { expect: 200, params: { job_id: a.job_id }, json: body, label: 'replay' });
  check(again.body.replayed === true, 'releaseJob replay', snip(again.body));
  await call('releaseJob', { expect: 409, error: 'job_finalized', params: { job_id: a.job_id }, json: { claim_token: a.claim_token } });
  await call('releaseJob', { expect: 409, error: 'claim_lost', params: { job_id: b.job_id }, json: { claim_token: BAD_TOKEN } });
  await call('releaseJob', { expect: 404, error: 'not_found', params: { job_id: NO_SUCH_ID }, json: { claim_token: b.claim_token } });
  await call('releaseJob', { expect: 400, error: 'missing_field', field: 'claim_token', params: { job_id: b.job_id }, json: {} });
  await call('releaseJob', { expect: 400, error: 'invalid_field', field: 'reason', params: { job_id: b.job_id }, json: { claim_token: b.claim_token, reason: 'x'.repeat(2001) } });

  const ar = await call('releaseItem', { expect: 200, params: { item_id: b.item.id }, json: { reason: 'worker host died' } });
  check(ar.body.job.status === 'released' && ar.body.item.state === 'available', 'releaseItem', snip(ar.body));
  await call('heartbeatJob', { expect: 409, error: 'claim_lost', params: { job_id: b.job_id }, json: { claim_token: b.claim_token }, label: 'after an admin release' });
  await call('releaseItem', { expect: 200, params: { item_id: c.item.id }, label: 'no body' });
  await call('releaseItem', { expect: 409, error: 'invalid_transition', params: { item_id: c.item.id }, label: 'not claimed' });
  await call('releaseItem', { expect: 404, error: 'not_found', params: { item_id: NO_SUCH_ID } });
  await call('releaseItem', { expect: 400, error: 'invalid_field', field: 'reason', params: { item_id: c.item.id }, json: { reason: 5 } });
  await call('listJobs', { expect: 200, query: { flow_step_id: FS_REL, status: 'released' }, label: 'released jobs' });
}

// A heartbeat's checkpoint handed to the next claim, worker_version on
// the job and its tool failures, and the redrive filters of a bulk requeue.
async function redrive() {
  const F = `${FS}_redrive`;
  await call('registerItems', { expect: 200, json: { items: [1, 2].map((i) => ({ flow_step_id: F, source_type: 'rss', item_identifier: `rd${i}` })) } });
  const cl = await call('claimItems', { expect: 200, json: { flow_step_id: F, worker_id: 'contract@rd', worker_version: '1.4.1', limit: 2 } });
  const [a, b] = cl.body.claims;
  check(a.previous_checkpoint === null, 'claimItems', `a first claim has a previous_checkpoint: ${snip(a)}`);
  await call('claimItems', { expect: 400, error: 'invalid_field', field: 'worker_version', json: { flow_step_id: F, worker_id: 'w', worker_version: 'v1.4' } });
  await call('heartbeatJob', { expect: 200, params: { job_id: a.job_id }, json: { claim_token: a.claim_token, checkpoint: { post_id: 42, api_key: 'sk-live-0123456789abcdefXYZ' } }, label: 'checkpoint' });
  await call('heartbeatJob', { expect: 400, error: 'invalid_field', field: 'checkpoint', params: { job_id: a.job_id }, json: { claim_token: a.claim_token, checkpoint: [42] } });
  await call('heartbeatJob', { expect: 413, error: 'payload_too_large', field: 'checkpoint', params: { job_id: a.job_id }, json: { claim_token: a.claim_token, checkpoint: { blob: 'x'.repeat(65536) } }, specAccepts: false, label: 'checkpoint over 64 KiB' });
  const job = await call('getJob', { expect: 200, params: { job_id: a.job_id } });
  check(job.body.job.checkpoint.post_id === 42 && job.body.job.checkpoint.api_key === '[REDACTED]' && job.body.job.worker_version === '1.4.1', 'getJob', snip(job.body));
  const list = await call('listJobs', { expect: 200, query: { flow_step_id: F } });
  check(list.body.jobs.every((j) => !('checkpoint' in j) && j.worker_version === '1.4.1'), 'listJobs', snip(list.body));
  await call('reportToolFailure', { expect: 200, params: { job_id: a.job_id }, json: { claim_token: a.claim_token, tool: 'wiki_upsert', args: {}, error: 'target_path must stay inside root', kind: 'deterministic' } });
  await call('reportDisposition', { expect: 200, params: { job_id: a.job_id }, json: { claim_token: a.claim_token, disposition: 'fail', error: 'upsert failed', retryable: false } });
  await call('reportDisposition', { expect: 200, params: { job_id: b.job_id }, json: { claim_token: b.claim_token, disposition: 'fail', error: 'x', retryable: false } });
  // redrive: a dry run, then the same ids for real
  const sel = { flow_step_id: F, states: ['failed', 'deferred'], tool_failed: 'wiki_upsert', failed_under_version: '<1.4.2', since: '2020-01-01T00:00:00Z', until: '2100-01-01T00:00:00Z' };
  const dry = await call('requeueItems', { expect: 200, json: { ...sel, dry_run: true }, label: 'redrive dry run' });
  check(isDeepStrictEqual(dry.body.item_ids, [a.item.id]), 'requeueItems', `dry run ${snip(dry.body)}`);
  const real = await call('requeueItems', { expect: 200, json: { ...sel, reason: 'fixed in 1.4.2' }, label: 'redrive' });
  check(isDeepStrictEqual(real.body.item_ids, dry.body.item_ids) && real.body.requeued === 1, 'requeueItems', `redrive ${snip(real.body)}`);
  const again = await call('claimItems', { expect: 200, json: { flow_step_id: F, worker_id: 'contract@rd', worker_version: '1.4.2' } });
  check(again.body.claims[0].previous_checkpoint.post_id === 42, 'claimItems', `previous_checkpoint ${snip(again.body)}`);
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'tool', json: { flow_step_id: F, state: 'failed', tool: 'x' }, label: 'unknown member' });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'state', json: { flow_step_id: F, state: 'failed', states: ['failed'] }, label: 'state and states' });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'states', json: { flow_step_id: F, states: ['failed', 'claimed'] } });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'states', json: { flow_step_id: F, states: [] } });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'failed_under_version', json: { flow_step_id: F, state: 'failed', failed_under_version: '<=1.4.2' } });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'failed_under_version', json: { flow_step_id: F, state: 'failed', failed_under_version: '<1.4' } });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'tool_failed', json: { flow_step_id: F, state: 'failed', tool_failed: '' } });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'since', json: { flow_step_id: F, state: 'failed', since: 'yesterday' } });
  await call('requeueItems', { expect: 400, error: 'invalid_field', field: 'until', json: { flow_step_id: F, state: 'failed', until: '2026-13-01T00:00:00Z' } });
}

async function authMatrix() {
  for (const o of ops.values()) {
    const params = paramsFor(o);
    if (o.role === 'none') {
      await call(o.id, { params, token: null, expect: ONLY_405.has(o.id) ? 405 : okStatus(o), label: 'no token needed' });
      continue;
    }
    await call(o.id, { params, token: null, expect: 401, error: 'unauthorized', label: 'no token' });
    await call(o.id, { params, token: 'Bearer not-a-key-of-this-server', expect: 401, error: 'unauthorized', label: 'unknown token' });
    await call(o.id, { params, token: `Basic ${Buffer.from(`x:${TOKENS.admin}`).toString('base64')}`, expect: 401, error: 'unauthorized', label: 'not bearer' });
    for (const lower of ROLES.slice(1, ROLES.indexOf(o.role)))
      await call(o.id, { params, token: lower, expect: 403, error: 'forbidden', label: `${lower} key` });
  }
}

// Every operation: a body over the cap, a body that is not JSON, malformed JSON.
async function bodyMatrix() {
  const big = `{"pad": "${'x'.repeat(MAX_BODY)}"}`;
  for (const o of ops.values()) {
    const params = paramsFor(o);
    const token = o.role === 'none' ? null : 'admin';
    await call(o.id, { params, token, raw: big, expect: 413, error: 'payload_too_large', label: 'body over the cap' });
    await call(o.id, { params, token, raw: 'hello', ctype: 'text/plain', expect: 415, error: 'unsupported_media_type', label: 'text/plain body' });
    await call(o.id, { params, token, raw: '{}', ctype: 'application/x-www-form-urlencoded', expect: 415, error: 'unsupported_media_type', label: 'form body' });
    await call(o.id, { params, token, raw: '{"a": ', expect: 400, error: 'invalid_json', label: 'malformed JSON' });
  }
}

// Does a concrete URL path match a path template (a {param} is any one segment)?
function templateMatches(tpl, url) {
  const a = tpl.split('/');
  const b = url.split('/');
  return a.length === b.length && a.every((seg, i) => (/^\{\w+\}$/.test(seg) ? b[i] !== '' : seg === b[i]));
}

// Requests no operation matches: 404 for unknown paths, 405 with Allow for other methods.
// A URL can match more than one template (/v1/items/lookup also fits /v1/items/{item_id});
// as OpenAPI says, the concrete path wins: only the matching templates with the fewest
// parameters count, so GET /v1/items/lookup is a 405 (Allow: POST), not item "lookup".
async function unrouted() {
  for (const p of ['/nope', '/healthz/', '/v1', '/v1/items/', '/v1/items/1/2', '/v1/jobs/1/nope', '/V1/items', '/v1/jobs//heartbeat'])
    await callRaw('GET', p, { token: 'admin', expect: 404, error: 'not_found' });
  const nparams = (t) => (t.match(/\{\w+\}/g) || []).length;
  for (const tpl of Object.keys(spec.paths)) {
    const url = tpl.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(sampleParams[k]));
    const allowed = new Set();
    const matching = Object.entries(spec.paths).filter(([t]) => templateMatches(t, url));
    const fewest = Math.min(...matching.map(([t]) => nparams(t)));
    for (const [t, item] of matching)
      if (nparams(t) === fewest) METHODS.filter((m) => item[m]).forEach((m) => allowed.add(m.toUpperCase()));
    if (allowed.has('GET')) allowed.add('HEAD');
    for (const m of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
      if (allowed.has(m)) continue;
      const r = await callRaw(m, url, { token: 'admin', expect: 405, error: 'method_not_allowed' });
      const allow = (r.headers.allow || '').split(',').map((x) => x.trim()).filter(Boolean).sort();
      const want = [...allowed].filter((x) => x !== 'HEAD').sort();
      check(isDeepStrictEqual(allow, want), r.label, `Allow '${r.headers.allow}' is not the documented methods ${want.join(', ')}`);
    }
  }
}

// The database goes away: every operation that documents 503 answers it (retryable, with
// Retry-After); every other one still answers 200 (the spec says they need no database).
async function outage() {
  psql(`DROP DATABASE ${DB_NAME} WITH (FORCE)`);
  dbCreated = false;
  const valid = {
    registerItems: { json: { items: [{ flow_step_id: FS, source_type: 'rss', item_identifier: 'x' }] } },
    lookupItems: { json: { flow_step_id: FS, source_type: 'rss', item_identifiers: ['x'] } },
    requeueItems: { json: { flow_step_id: FS, state: 'failed' } },
    resolveItem: { json: { outcome: 'processed', reason: 'x' } },
    reviewItem: { json: { decision: 'processed' } },
    resolveItems: { json: { flow_step_id: FS, state: 'failed', outcome: 'processed', reason: 'x' } },
    claimItems: { json: { flow_step_id: FS, worker_id: 'w' } },
    heartbeatJob: { json: { claim_token: BAD_TOKEN } },
    releaseJob: { json: { claim_token: BAD_TOKEN } },
    reportDisposition: { json: { claim_token: BAD_TOKEN, disposition: 'complete' } },
    reportDispositions: { json: { dispositions: [{ job_id: 1, claim_token: BAD_TOKEN, disposition: 'complete' }] } },
    reportToolFailure: { json: { claim_token: BAD_TOKEN, tool: 't', error: 'e' } },
    reportToolSuccess: { json: { claim_token: BAD_TOKEN, tool: 't' } },
    mcpMessage: { headers: { 'Verdict-Claim': `1:${BAD_TOKEN}` }, json: { jsonrpc: '2.0', id: 1, method: 'ping' } },
    reportSessionOutcome: { json: { claim_token: BAD_TOKEN, session: SUCCESS_SESSION } },
    adjudicateSession: { json: { session: SUCCESS_SESSION } },
  };
  for (const o of ops.values()) {
    const c = { params: paramsFor(o), ...(valid[o.id] || {}) };
    if (o.op.responses['503'] || o.op.responses['5XX']) await call(o.id, { ...c, expect: 503, error: 'database_unavailable', label: 'database gone' });
    else await call(o.id, { ...c, expect: ONLY_405.has(o.id) ? 405 : okStatus(o), label: 'database gone, needs none' });
  }
}

// The served tool schemas (SPEC §5.2) against the endpoint they stand for: every argument
// object generated from a tool's schema — each property at its bounds and just past them,
// wrong types, each enum value and a wrong one, a required property left out — is validated
// with ajv AND sent as {claim_token, disposition: dispositions[tool], ...args}; the server
// must accept (200) exactly what the schema accepts and refuse (400) what it rejects. Unknown
// properties are the one deliberate difference: the schemas say additionalProperties: false
// (what strict function calling wants) while the endpoint ignores unknown fields.
async function toolSchemas() {
  const defs = {};
  for (const format of ['openai', 'anthropic', 'mcp'])
    defs[format] = (await call('getToolDefinitions', { expect: 200, query: { format } })).body;
  const schemaOf = (format, t) => (format === 'openai' ? t.function.parameters : format === 'mcp' ? t.inputSchema : t.input_schema);
  const nameOf = (format, t) => (format === 'openai' ? t.function.name : t.name);
  const tools = defs.anthropic.tools.map((t) => ({ name: t.name, schema: t.input_schema, disposition: defs.anthropic.dispositions[t.name] }));
  for (const format of ['openai', 'mcp'])
    defs[format].tools.forEach((t, i) => check(isDeepStrictEqual(schemaOf(format, t), tools[i].schema) && nameOf(format, t) === tools[i].name,
      'getToolDefinitions', `${format} tool ${i} differs from the anthropic one`));
  const FS_TOOLS = `${FS}_tools`;
  await call('registerItems', { expect: 200, json: { items: Array.from({ length: 150 }, (_, i) => ({ flow_step_id: FS_TOOLS, source_type: 'rss', item_identifier: `tool-${i}` })) } });
  let claim = null;
  const nextClaim = async () => {
    const r = await call('claimItems', { expect: 200, json: { flow_step_id: FS_TOOLS, worker_id: 'contract@tools', limit: 1 } });
    if (r.body.claims.length !== 1) throw new Error('tool schema test ran out of items');
    claim = r.body.claims[0];
  };
  const variants = (prop) => { // [value, note] pairs: valid and invalid by construction
    const out = [];
    if (prop.enum) { prop.enum.forEach((v) => out.push([v, `'${v}'`])); out.push(['not_a_code', 'unknown code'], [7, 'number']); return out; }
    if (prop.type === 'string') {
      const lo = prop.minLength || 0, hi = prop.maxLength;
      out.push(['x'.repeat(Math.max(lo, 1)), 'short'], ['y'.repeat(hi), 'at maxLength'], ['z'.repeat(hi + 1), 'past maxLength'], [12, 'number']);
      if (lo > 0) out.push(['', 'empty']);
      return out;
    }
    if (prop.type === 'integer') return [[prop.minimum, 'minimum'], [prop.maximum, 'maximum'], [prop.minimum - 1, 'below minimum'], [prop.maximum + 1, 'above maximum'], [1.5, 'fraction'], ['5', 'string']];
    if (prop.type === 'boolean') return [[true, 'true'], [false, 'false'], ['true', 'string'], [1, 'number']];
    if (prop.type === 'number') return [[prop.minimum, 'minimum'], [prop.maximum, 'maximum'], [prop.minimum - 1, 'below minimum'], [prop.maximum * 2, 'above maximum'], [0.25, 'fraction'], ['5', 'string']];
    if (prop.type === 'object') { // an object member (usage): its required members, then each member's variants
      const ok = {};
      for (const k of prop.required || []) ok[k] = variants(prop.properties[k])[0][0];
      out.push([ok, 'required members'], [{}, 'empty object'], [{ ...ok, surprise: 1 }, 'unknown member'], ['x', 'string']);
      for (const [k, p] of Object.entries(prop.properties || {})) for (const [v, note] of variants(p)) out.push([{ ...ok, [k]: v }, `.${k} ${note}`]);
      return out;
    }
    throw new Error(`no variants for ${JSON.stringify(prop)}`);
  };
  let agreed = 0;
  for (const t of tools) {
    const validate = ajv.compile(t.schema);
    const props = t.schema.properties || {};
    const base = {};
    for (const k of t.schema.required || []) base[k] = variants(props[k]).find(([v]) => validate({ ...base, [k]: v }) || true)[0];
    check(validate(base), t.name, `the base arguments ${snip(base)} are not valid under the schema`);
    const cases = [[base, 'required only']];
    for (const k of t.schema.required || []) { const b = { ...base }; delete b[k]; cases.push([b, `without ${k}`]); }
    for (const [k, prop] of Object.entries(props))
      for (const [v, note] of variants(prop)) cases.push([{ ...base, [k]: v }, `${k} ${note}`]);
    for (const [args, note] of cases) {
      if (!claim) await nextClaim();
      const want = validate(args) ? 200 : 400;
      const r = await call('reportDisposition', {
        params: { job_id: claim.job_id }, json: { claim_token: claim.claim_token, disposition: t.disposition, ...args },
        label: `tool ${t.name}: ${note}`,
      });
      check(r.status === want, `tool ${t.name}`, `${note}: the schema says ${want === 200 ? 'valid' : 'invalid'} but the endpoint answered ${r.status} ${snip(r.body)}`);
      if (r.status === want) agreed++;
      if (r.status === 200) claim = null; // that call finished the job
    }
    check(!validate({ ...base, surprise: 1 }), t.name, 'the schema accepts an unknown property');
  }
  check(agreed > 40, 'toolSchemas', `only ${agreed} argument objects compared`);
  console.log(`tools: ${tools.length} tools, ${agreed} argument objects where schema and endpoint agree`);
}

// The MCP endpoint (docs/api-guide.md, "MCP"): the JSON-RPC answers and every transport refusal it
// documents, validated like any other operation. The SDK-driven test is tests/mcp/mcp.mjs.
async function mcp() {
  const FS_MCP = `${FS}_mcp`;
  await call('registerItems', { expect: 200, json: { items: [0, 1].map((i) => ({ flow_step_id: FS_MCP, source_type: 'rss', item_identifier: `mcp-${i}`, payload: { n: i } })) } });
  const cl = (await call('claimItems', { expect: 200, json: { flow_step_id: FS_MCP, worker_id: 'contract@mcp', limit: 2 } })).body.claims;
  if (cl.length !== 2) throw new Error('mcp: could not claim two items');
  const claim = `${cl[0].job_id}:${cl[0].claim_token}`;
  const rpc = (json, { headers, ...extra } = {}) => call('mcpMessage', { token: 'worker', headers: { 'Verdict-Claim': claim, ...(headers || {}) }, json, ...extra, label: extra.label || `mcp ${json.method || 'message'}` });
  const init = await rpc({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'contract', version: '1' } } }, { expect: 200 });
  check(init.body.result && init.body.result.protocolVersion === '2025-06-18', 'mcp initialize', snip(init.body));
  await rpc({ jsonrpc: '2.0', method: 'notifications/initialized' }, { expect: 202, headers: { 'MCP-Protocol-Version': '2025-06-18' } });
  const list = await rpc({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { expect: 200 });
  const defs = (await call('getToolDefinitions', { expect: 200, query: { format: 'mcp' } })).body.tools;
  check(isDeepStrictEqual(list.body.result.tools.slice(0, defs.length), defs), 'mcp tools/list', 'the disposition tools differ from /v1/tool-definitions?format=mcp');
  const read = await rpc({ jsonrpc: '2.0', id: 3, method: 'resources/read', params: { uri: 'verdict://job' } }, { expect: 200 });
  check(JSON.parse(read.body.result.contents[0].text).job.id === cl[0].job_id, 'mcp resources/read', snip(read.body));
  const bad = await rpc({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'reject_source', arguments: { reason_code: 'nope' } } }, { expect: 200 });
  check(bad.body.result.isError === true && bad.body.result.structuredContent.error === 'invalid_field', 'mcp tools/call refused', snip(bad.body));
  const done = await rpc({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: { name: 'complete_item', arguments: {} } }, { expect: 200 });
  check(done.body.result.isError === false && done.body.result.structuredContent.item.state === 'processed', 'mcp tools/call', snip(done.body));
  const miss = await rpc({ jsonrpc: '2.0', id: 6, method: 'no/such' }, { expect: 200 });
  check(miss.body.error && miss.body.error.code === -32601 && miss.body.id === 6, 'mcp unknown method', snip(miss.body));
  // the 400s: no/malformed claim, unsupported version, malformed JSON, not JSON-RPC, batches
  const ping = { jsonrpc: '2.0', id: 7, method: 'ping' };
  await call('mcpMessage', { token: 'worker', json: ping, expect: 400, error: 'missing_field', field: 'Verdict-Claim', label: 'mcp without Verdict-Claim' });
  for (const v of ['42', `0:${cl[0].claim_token}`, `${cl[0].job_id}:nope`])
    await rpc(ping, { headers: { 'Verdict-Claim': v }, expect: 400, error: 'invalid_field', field: 'Verdict-Claim', label: `mcp Verdict-Claim '${v}'` });
  await rpc(ping, { headers: { 'MCP-Protocol-Version': '1999-01-01' }, expect: 400, error: 'invalid_field', field: 'MCP-Protocol-Version', label: 'mcp unsupported version' });
  await call('mcpMessage', { token: 'worker', headers: { 'Verdict-Claim': claim }, raw: '{"jsonrpc": ', expect: 400, error: 'invalid_json', label: 'mcp malformed JSON' });
  const inv = await rpc({ jsonrpc: '1.0', id: 8, method: 'ping' }, { expect: 400, specAccepts: false, label: 'mcp not JSON-RPC 2.0' });
  check(inv.body.error && inv.body.error.code === -32600 && inv.body.id === 8, 'mcp invalid request', snip(inv.body));
  const batch = await rpc([ping], { headers: { 'MCP-Protocol-Version': '2025-11-25' }, expect: 400, label: 'mcp batch under 2025-11-25' });
  check(batch.body.error && batch.body.error.code === -32600, 'mcp batch refused', snip(batch.body));
  const old = await rpc([ping, { jsonrpc: '2.0', method: 'notifications/x' }], { headers: { 'MCP-Protocol-Version': '2025-03-26' }, expect: 200, label: 'mcp batch under 2025-03-26' });
  check(Array.isArray(old.body) && old.body.length === 1 && old.body[0].id === 7, 'mcp batch answered', snip(old.body));
  // the 403s: another job's token, a foreign Origin
  await rpc(ping, { headers: { 'Verdict-Claim': `${cl[0].job_id}:${cl[1].claim_token}` }, expect: 403, error: 'claim_mismatch', field: 'Verdict-Claim', label: "mcp another job's token" });
  await rpc(ping, { headers: { Origin: 'http://evil.example' }, expect: 403, error: 'origin_forbidden', field: 'Origin', label: 'mcp foreign Origin' });
  for (const id of ['mcpOpenStream', 'mcpEndSession']) {
    const r = await call(id, { token: null, headers: { Accept: 'text/event-stream' }, expect: 405, error: 'method_not_allowed' });
    check(r.headers.allow === 'POST', id, `Allow '${r.headers.allow}'`);
  }
}

// ------------------------------------------------------------------------------------------

let fatal = null;
try {
  category('server');
  await startServer();
  await group('system', system);
  await group('items', items);
  await group('claims', claims);
  await group('outcomes', outcomes);
  await group('batches', batches);
  await group('claim_next', claimNext);
  await group('releases', releases);
  await group('reads', reads);
  await group('admin', admin);
  await group('redrive', redrive);
  await group('incidents', incidents);
  await group('console', consoleOps);
  await group('reviews', reviews);
  await group('tools', toolSchemas);
  await group('mcp', mcp);
  await group('limits', limits);
  await group('auth', authMatrix);
  await group('bodies', bodyMatrix);
  await group('unrouted', unrouted);
  await group('outage', outage);
} catch (e) {
  fatal = e;
}
await cleanup();
if (fatal) { category('server'); fail('server', fatal.message); }
if (serverExit && !fatal) {
  category('lifecycle');
  check(serverExit.code === 0, 'SIGTERM', `verdictd exited with ${JSON.stringify(serverExit)}, not 0`);
}

// coverage: every operation called, its success answer seen; the rest is reported
category('coverage');
let documentedPairs = 0;
let coveredPairs = 0;
const missing = [];
for (const o of ops.values()) {
  const keys = Object.keys(o.op.responses);
  const seen = covered.get(o.id);
  documentedPairs += keys.length;
  for (const k of keys) {
    if (seen.has(k)) coveredPairs++;
    else if (k !== '500') missing.push(`${o.id} ${k}`);
  }
  if (fatal) continue; // the run was cut short: that is the failure to read
  check(seen.size > 0, o.id, 'was never called');
  check(keys.filter((k) => k.startsWith('2')).every((k) => seen.has(k)), o.id, 'its success answer was never seen');
}
const calledOps = [...ops.values()].filter((o) => covered.get(o.id).size > 0).length;
const internal = [...ops.values()].filter((o) => o.op.responses['500']).length;
if (fatal) console.log('coverage: not reported, the run was cut short');
else console.log(`coverage: ${calledOps}/${ops.size} operations called; ${coveredPairs}/${documentedPairs - internal} documented (operation, status) pairs exercised (+${internal} × 500 internal, unreachable from client input by design)`);
if (missing.length && !fatal) console.log(`coverage: not exercised: ${missing.join(', ')}`);
for (const o of fatal ? [] : ops.values()) {
  const seen = [...covered.get(o.id).entries()].map(([k, n]) => `${k}×${n}`).join(' ');
  console.log(`  ${o.id.padEnd(22)} ${o.method.padEnd(4)} ${o.template.padEnd(36)} ${seen}`);
}

let failures = 0;
for (const [name, c] of categories) {
  failures += c.failures.length;
  console.log(`${c.failures.length ? 'FAIL' : 'ok  '} ${name}: ${c.responses} responses, ${c.checks} checks, ${c.failures.length} failures`);
  for (const f of c.failures) console.log(`       - ${f}`);
}
if (failures && existsSync(LOG_PATH)) {
  const lines = readFileSync(LOG_PATH, 'utf8').trimEnd().split('\n').slice(-30);
  console.log(`verdictd log (${LOG_PATH}, last ${lines.length} lines):\n${lines.join('\n')}`);
} else if (existsSync(LOG_PATH)) {
  unlinkSync(LOG_PATH);
}
const secs = ((Date.now() - started) / 1000).toFixed(1);
console.log(`contract: ${responsesValidated} responses validated, ${ops.size} operations, ${failures} failures (${secs} s)`);
process.exit(failures ? 1 : 0);
