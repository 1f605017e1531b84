// common.mjs - what pgboss.mjs and graphile.mjs share: the command line verdict-bench passes
// (a libpq keyword string, clients, batch, warm-up, duration, stock), the line protocol on
// stdout ("measure" when the measured window opens, "stop" when it closes, then one JSON
// line with the result), closed-loop timing and nearest-rank percentiles.

export function parseArgs(argv) {
  const o = { url: '', clients: 8, batch: 1, warmup: 1, duration: 10, stock: 100000, tag: 'bench' };
  for (let i = 2; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, '');
    const v = argv[i + 1];
    if (!(k in o) || v === undefined) throw new Error(`bad option ${argv[i]}`);
    o[k] = typeof o[k] === 'number' ? Number(v) : v;
  }
  return o;
}

// "host='127.0.0.1' port='5432' ..." (bench/env.c's quoting) -> a node-postgres config.
export function pgConfig(url, max) {
  const cfg = { max };
  const re = /(\w+)\s*=\s*(?:'((?:[^'\\]|\\.)*)'|(\S+))/g;
  const names = { dbname: 'database', user: 'user', host: 'host', port: 'port', password: 'password' };
  for (let m; (m = re.exec(url)); ) {
    const val = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : m[3];
    if (names[m[1]]) cfg[names[m[1]]] = m[1] === 'port' ? Number(val) : val;
  }
  return cfg;
}

import { readFileSync } from 'node:fs';

// The installed version of a package beside this file.
export function version(pkg) {
  const url = new URL(`./node_modules/${pkg}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')).version;
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export function pct(samples, p) {
  if (!samples.length) return 0;
  const s = Float64Array.from(samples).sort();
  const rank = Math.max(1, Math.ceil((p / 100) * s.length));
  return s[rank - 1];
}

// One line from verdict-bench on stdin: it has read the server's counters.
function ack() {
  return new Promise((resolve) => {
    process.stdin.once('data', () => { process.stdin.pause(); resolve(); });
    process.stdin.once('end', resolve);
  });
}

// The window: warm-up, then "measure" (verdict-bench snapshots), duration, "stop", and wait
// for verdict-bench's acknowledgement before anything else touches the database (clean-up
// must not be counted in the window's WAL and statements). before()/after() read the
// verified count from the queue's own tables; after() also stops the workers.
export async function window(o, before, after) {
  await sleep(o.warmup * 1000);
  const b = await before();
  const t0 = performance.now();
  process.stdout.write('measure\n');
  await sleep(o.duration * 1000);
  const a = await after();
  const seconds = (performance.now() - t0) / 1000;
  process.stdout.write('stop\n');
  await ack();
  return { before: b, after: a, seconds };
}

export function result(fields) {
  process.stdout.write(JSON.stringify(fields) + '\n');
}
