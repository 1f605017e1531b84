// pgboss.mjs - pg-boss (npm) as verdict-bench's peer: `clients` closed-loop workers, each
// fetch({batchSize: batch}) then complete(name, ids) of what it got, no-op handler, which
// is pg-boss's documented way to move many jobs (batch fetch and batch complete). The stock
// is inserted by SQL into the queue's partition; the jobs finished in the window are
// counted from pgboss.job (state 'completed') before and after it.
import { PgBoss } from 'pg-boss';
import pg from 'pg';
import { parseArgs, pgConfig, window, pct, result, version } from './common.mjs';

const o = parseArgs(process.argv);
const name = `bench_${o.tag}`;
const boss = new PgBoss({ ...pgConfig(o.url, o.clients), schedule: false });
boss.on('error', (e) => process.stderr.write(`pg-boss: ${e.message}\n`));
const admin = new pg.Client(pgConfig(o.url));
await boss.start();
await admin.connect();
await boss.createQueue(name);
await admin.query(
  `INSERT INTO pgboss.job (name, data, policy)
   SELECT $1, jsonb_build_object('n', g), 'standard' FROM generate_series(1, $2) g`,
  [name, o.stock]);
await admin.query('ANALYZE pgboss.job');
const completed = async () =>
  Number((await admin.query(
    `SELECT count(*) AS n FROM pgboss.job WHERE name = $1 AND state = 'completed'`, [name])).rows[0].n);

let measuring = false, stop = false, errors = 0, empty = 0, fetchCalls = 0, completeCalls = 0;
const fetchLat = [], completeLat = [];
let firstError = '';
async function worker() {
  while (!stop) {
    try {
      let t0 = performance.now();
      const jobs = await boss.fetch(name, { batchSize: o.batch });
      let t1 = performance.now();
      if (measuring) { fetchLat.push(t1 - t0); fetchCalls++; }
      if (!jobs || jobs.length === 0) { if (measuring) empty++; continue; }
      t0 = performance.now();
      await boss.complete(name, jobs.map((j) => j.id));
      t1 = performance.now();
      if (measuring) { completeLat.push(t1 - t0); completeCalls++; }
    } catch (e) {
      errors++;
      if (!firstError) firstError = String(e.message || e);
    }
  }
}
const workers = Array.from({ length: o.clients }, () => worker());
const w = await window(o, async () => { const n = await completed(); measuring = true; return n; },
  async () => { measuring = false; stop = true; return completed(); });
await Promise.all(workers);
result({
  system: `pg-boss ${version('pg-boss')}`,
  seconds: w.seconds, items: w.after - w.before, claim_calls: fetchCalls, disp_calls: completeCalls,
  claim_ms: [pct(fetchLat, 50), pct(fetchLat, 95), pct(fetchLat, 99)],
  disp_ms: [pct(completeLat, 50), pct(completeLat, 95), pct(completeLat, 99)],
  errors, empty, first_error: firstError,
});
await boss.deleteQueue(name);
await admin.end();
await boss.stop({ graceful: false, wait: true });
