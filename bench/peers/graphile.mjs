// graphile.mjs - graphile-worker (npm) as verdict-bench's peer: one runner with
// concurrency = clients and a no-op task. With batch > 1 it uses graphile-worker's documented
// throughput settings (worker.graphile.org/docs/performance#batching): a local queue
// (localQueue.size = max(batch, clients + 1), jobs fetched and locked in batches) and batched
// completion (completeJobBatchDelay 0); with batch 1 its defaults (one get_job and one
// complete_job per job). The stock is added by SQL through graphile_worker.add_jobs; completed
// jobs are deleted, so the jobs finished in the window are the drop in the task's row count.
import pg from 'pg';
import { Logger, run, runMigrations } from 'graphile-worker';
import { parseArgs, pgConfig, window, result, version } from './common.mjs';

const o = parseArgs(process.argv);
const task = `bench_${o.tag}`;
const pgPool = new pg.Pool(pgConfig(o.url, o.clients + 2));
pgPool.on('error', (e) => process.stderr.write(`graphile-worker pool: ${e.message}\n`));
pgPool.on('connect', (c) => c.on('error', (e) => process.stderr.write(`graphile-worker: ${e.message}\n`)));
const admin = new pg.Client(pgConfig(o.url));
// stdout carries the protocol: graphile-worker's own log lines go to stderr, errors only
const logger = new Logger(() => (level, message) => {
  if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
});
await admin.connect();
await runMigrations({ pgPool, logger });
for (let left = o.stock; left > 0; left -= 10000) {
  await admin.query(
    `SELECT graphile_worker.add_jobs(ARRAY(SELECT json_populate_record(NULL::graphile_worker.job_spec,
       json_build_object('identifier', $1::text, 'payload', json_build_object('n', g)))
       FROM generate_series(1, $2) g))`, [task, Math.min(left, 10000)]);
}
await admin.query('ANALYZE graphile_worker._private_jobs');
const remaining = async () =>
  Number((await admin.query(
    `SELECT count(*) AS n FROM graphile_worker._private_jobs j
       JOIN graphile_worker._private_tasks t ON t.id = j.task_id WHERE t.identifier = $1`,
    [task])).rows[0].n);
let done = 0, measuring = false;
const preset = {
  worker: o.batch > 1
    ? { localQueue: { size: Math.max(o.batch, o.clients + 1) }, completeJobBatchDelay: 0 }
    : {},
};
const runner = await run({
  pgPool, concurrency: o.clients, noHandleSignals: true, logger,
  preset,
  taskList: { [task]: async () => { if (measuring) done++; } },
});
let stopping;
const w = await window(o, async () => { measuring = true; return remaining(); },
  async () => { measuring = false; const n = await remaining(); stopping = runner.stop(); return n; });
await stopping;
const failed = Number((await admin.query(
  `SELECT count(*) AS n FROM graphile_worker._private_jobs j JOIN graphile_worker._private_tasks t
     ON t.id = j.task_id WHERE t.identifier = $1 AND j.last_error IS NOT NULL`, [task])).rows[0].n);
result({
  system: `graphile-worker ${version('graphile-worker')}`,
  seconds: w.seconds, items: w.before - w.after, handler_calls: done,
  errors: failed, empty: w.after === 0 ? 1 : 0, first_error: w.after === 0 ? 'the stock ran out' : '',
});
await admin.query(
  `DELETE FROM graphile_worker._private_jobs j USING graphile_worker._private_tasks t
    WHERE t.id = j.task_id AND t.identifier = $1`, [task]);
await admin.end();
await pgPool.end();
