#!/usr/bin/env python3
"""bench/cpuprobe.py SNAPSHOT [N] [OUT]: PostgreSQL instructions per statement of the
single-item cycle, counted by callgrind (deterministic on a busy machine).

SNAPSHOT is a stopped data directory holding database `seed` migrated by verdictd with at
least 3N claimable items in flow step bench_0 (bench/cpuprobe.sh makes one and runs this). The probe
copies it twice: a dry run in `postgres --single` learns the job ids the claims will take,
then a run under `valgrind --tool=callgrind` replays, as verdictd sends them (the statement
texts of sql/statements/, prepared; the same BEGIN / SET LOCAL / COMMIT around them):
  phase claim:  2N x claim_many of one (the coalescer's single claim, generic plan)
  phase lock:   N x job_lock alone
  phase cycle:  N x job_lock + job_finish (a completion, the parameters verdictd sends)
  phases batch: N x jobs_lock alone, N x jobs_lock + jobs_finish, one row each (the path of
                coalesced dispositions), on N more claimed items
  phase reclaim: N x claim_many of one more, every earlier job finished and every plan made
                (the steady state: with KEYS, lanes whose holders have all finished)
A marker statement (SELECT pg_backend_pid(), pg_current_wal_insert_lsn()) between phases
makes callgrind dump there, so each phase's instructions are in a file of their own, and
gives the WAL range of each phase (bytes, and records counted by pg_waldump; the run starts
after a checkpoint, so first touches of pages pay full-page images, alike in every run). Prints instructions per item per
phase, job_finish = cycle - lock, and the top functions of each phase into OUT (default
/tmp/cpuprobe). PRE_SQL=FILE runs FILE's statements (each ending ";" and a blank line)
first, in the same session (a variant of a function or a constraint, to compare);
STATEMENTS=DIR reads the statement texts from DIR (another commit's sql/statements).
KEYS=K claims with claim_many_take naming K limits that never bind (bench-k0..), as
verdict-bench --limit-keys K does: the cost of the limit cells per claim (N <= 32: the claim
phase holds its 2N claims, and the limits' concurrency is 64). CLAIM_SEQSCAN=1
leaves sequential scans on for the claims (as verdictd sent them before decision 0122).
TAKE=1 (without KEYS) claims with claim_many_take naming no key: what the limited claim's
statement costs besides its lanes (its plan is started whole, lanes or none).
MINIMAL=1 replays the benchmark's minimal SKIP LOCKED cycle (bench/minimal.c: its table,
its claim of one and its completion, each statement its own transaction) the same way, on
3N + 50 rows of its own table in the same database: phase claim 2N claims, phase complete N
completions of the first N, phase reclaim N claims more. The floor verdict's statements are
read against, statement by statement."""
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG_BIN = os.environ.get("VD_PG_BIN", "/usr/lib/postgresql/15/bin")


def statement(name):
    """The prepared text and parameter types of sql/statements/<name>.sql."""
    where = os.environ.get("STATEMENTS", os.path.join(ROOT, "sql", "statements"))
    with open(os.path.join(where, name + ".sql")) as f:
        lines = f.read().rstrip("\n").split("\n")
    types = [m.group(1) for m in (re.match(r"-- \$\d+ (.*)$", x) for x in lines) if m]
    return lines[-1], types


def lit(v):
    if v is None:
        return "NULL"
    return "'" + str(v).replace("'", "''") + "'"


def prepare(name):
    text, types = statement(name)
    return "PREPARE %s (%s) AS %s" % (name, ", ".join(types), text)


CLAIM = ('[{"ord": 0, "fs": "bench_0", "span": "475b3bcf681af071", "actor": "anonymous", "lease": 300, '
         '"trace": "5954a66037d3355651d85a90282232e6", "worker": "w1", "version": null}]')
TOKEN = "2ab41722-1604-4934-9517-8f73d7617ddf"
REQUEST = '{"claim_token": "%s", "disposition": "complete"}' % TOKEN
STD = "Recorded: completed. The item is processed. Stop now."


MARK = "SELECT pg_backend_pid(), pg_current_wal_insert_lsn()"


KEYS = int(os.environ.get("KEYS") or 0)  # e.g. 2: the claim names bench-k0, bench-k1 (never binding)


def limits():
    """With KEYS=K: K limits that never bind (as verdict-bench --limit-keys sets them)."""
    return ["SELECT verdict_limit_put('bench-k%d', 64, 1, 1000000, 64, 1000000000000)" % k
            for k in range(int(KEYS or 0))]


def claim_tx():
    if KEYS:
        keys = json.dumps(["bench-k%d" % k for k in range(int(KEYS))])
        claim = "EXECUTE claim_many_take(%s, %s, %s, 100)" % (lit("bench_0"), lit(CLAIM), lit(keys))
    elif os.environ.get("TAKE"):  # the limited claim's statement with no keys and no estimate
        claim = "EXECUTE claim_many_take(%s, %s, NULL, NULL)" % (lit("bench_0"), lit(CLAIM))
    else:
        claim = "EXECUTE claim_many(%s)" % lit(CLAIM)
    if os.environ.get("CLAIM_SEQSCAN"):  # as verdictd sent claims before decision 0122
        return ["BEGIN", "SET LOCAL plan_cache_mode = force_generic_plan", claim, "COMMIT"]
    return ["BEGIN", "SET LOCAL enable_seqscan = off",
            "SET LOCAL plan_cache_mode = force_generic_plan", claim, "COMMIT"]


def lock(job):
    return "EXECUTE job_lock(%d, %s, %s)" % (job, lit(TOKEN), lit(REQUEST))


def finish(job, item):
    p = [job, item, "processed", "completed", "complete", "complete", None, None, 0, 0, 0,
         "f", "anonymous", None, None, REQUEST, "complete", "f", None, "f", None, STD, "t",
         None, "006772cf66e3a700156c33a2502d1bfd"]
    return "EXECUTE job_finish(%s)" % ", ".join(lit(x) for x in p)


def batch_lock(job):
    rows = [{"ord": 0, "job_id": job, "token": TOKEN, "request": json.loads(REQUEST)}]
    return "EXECUTE jobs_lock(%s)" % lit(json.dumps(rows))


def batch_finish(job, item):
    row = {"ord": 0, "job_id": job, "item_id": item, "to_state": "processed",
           "job_status": "completed", "cause": "complete", "disposition": "complete",
           "reason_code": None, "reason": None, "failures": 0, "defers": 0, "delay": 0,
           "forced": False, "actor": "anonymous", "engine_data": None, "adjudication": None,
           "request": json.loads(REQUEST), "answer_disposition": "complete",
           "answer_adjudication": False, "deprecation_hint": None, "lint_overridden": False,
           "evidence": None, "tool_result_text": STD, "tool_result_terminal": True,
           "claims": None, "trace_id": "006772cf66e3a700156c33a2502d1bfd"}
    return "EXECUTE jobs_finish(%s, NULL)" % lit(json.dumps([row]))


MIN_SCHEMA = ["CREATE TABLE bench_min_jobs (id bigserial, queue text NOT NULL,"
              " state text NOT NULL DEFAULT 'available', payload jsonb NOT NULL, worker text,"
              " claimed_at timestamptz, finished_at timestamptz, PRIMARY KEY (queue, id))",
              "CREATE INDEX bench_min_claimable ON bench_min_jobs (queue, id)"
              " WHERE state = 'available'"]
MIN_CLAIM = ("PREPARE min_claim (text, text) AS UPDATE bench_min_jobs SET state = 'running',"
             " worker = $2, claimed_at = now() WHERE queue = $1 AND id = ANY (ARRAY(SELECT id"
             " FROM bench_min_jobs WHERE queue = $1 AND state = 'available' ORDER BY id LIMIT 1"
             " FOR UPDATE SKIP LOCKED)) RETURNING id, payload")
MIN_COMPLETE = ("PREPARE min_complete (text, bigint[]) AS UPDATE bench_min_jobs SET"
                " state = 'done', finished_at = now() WHERE queue = $1"
                " AND id = ANY ($2::bigint[]) AND state = 'running'")


def minimal_script(n):
    """MINIMAL=1: the minimal cycle's statements (bench/minimal.c), as its clients send them."""
    out = MIN_SCHEMA + ["INSERT INTO bench_min_jobs (queue, payload) SELECT 'bench_0',"
                        " jsonb_build_object('title', 'bench item ' || g)"
                        " FROM generate_series(1, %d) g" % (3 * n + 50),
                        "VACUUM ANALYZE bench_min_jobs", MIN_CLAIM, MIN_COMPLETE, "CHECKPOINT",
                        MARK]
    out += ["EXECUTE min_claim('bench_0', 'w1')"] * (2 * n)
    out.append(MARK)
    out += ["EXECUTE min_complete('bench_0', '{%d}')" % (j + 1) for j in range(n)]
    out.append(MARK)
    out += ["EXECUTE min_claim('bench_0', 'w1')"] * n
    out.append(MARK)
    return "".join(s + ";\n\n" for s in out)


def script(n, jobs):
    out = []
    if os.environ.get("PRE_SQL"):
        with open(os.environ["PRE_SQL"]) as f:
            out += [x.strip() for x in f.read().split(";\n\n") if x.strip()]
    out += limits()
    out += [prepare(s) for s in ("claim_many", "claim_many_take", "job_lock", "job_finish",
                                 "jobs_lock", "jobs_finish")]
    out.append(MARK)
    for _ in range(2 * n):
        out += claim_tx()
    if jobs is not None:
        tx = ["BEGIN", "SET LOCAL enable_seqscan = off",
              "SET LOCAL plan_cache_mode = force_generic_plan"]
        phases = ([tx + [lock(j), "COMMIT"] for j, _i in jobs[:n]],
                  [tx + [lock(j), finish(j, i), "COMMIT"] for j, i in jobs[:n]],
                  [tx + [batch_lock(j), "COMMIT"] for j, _i in jobs[n:]],
                  [tx + [batch_lock(j), batch_finish(j, i), "COMMIT"] for j, i in jobs[n:]])
        for phase in phases:
            out.append(MARK)
            for stmts in phase:
                out += stmts
        out.append(MARK)
        for _ in range(n):  # reclaim: N claims more, every earlier job finished, plans made
            out += claim_tx()
        out.append(MARK)
    return "".join(s + ";\n\n" for s in out)


def single(snap, work, text, pre=()):
    if os.path.exists(work):
        shutil.rmtree(work)
    subprocess.run(["cp", "-a", snap, work], check=True)
    cmd = list(pre) + [os.path.join(PG_BIN, "postgres"), "--single", "-j", "-D", work,
                       "-c", "fsync=off", "-c", "autovacuum=off", "seed"]
    if os.getuid() == 0:
        cmd = ["runuser", "-u", "postgres", "--"] + cmd
    r = subprocess.run(cmd, input=text, capture_output=True, text=True, cwd="/tmp")
    if "ERROR" in r.stderr or "ERROR" in r.stdout:
        sys.exit("single-user run failed:\n" + "\n".join(x for x in (r.stderr + r.stdout).split("\n") if "ERROR" in x or "DETAIL" in x)[-3000:])
    return r.stdout


def measured(out, text):
    """Instructions of each callgrind dump after the first, and the WAL (bytes, records)
    between consecutive markers in the single-user run's output TEXT."""
    lsns = re.findall(r'pg_current_wal_insert_lsn = "([0-9A-F]+/[0-9A-F]+)"', text)
    wal = []
    for a, b in zip(lsns, lsns[1:]):
        dump = subprocess.run([os.path.join(PG_BIN, "pg_waldump"), "-p", out + "/data/pg_wal",
                               "-s", a, "-e", b], capture_output=True, text=True).stdout
        size = (lambda x: (int(x[0], 16) << 32) + int(x[1], 16))
        wal.append((size(b.split("/")) - size(a.split("/")), dump.count("rmgr:")))
    files = sorted((f for f in os.listdir(out) if re.match(r"callgrind\.out\.\d+$", f)),
                   key=lambda f: int(f.rsplit(".", 1)[1]))
    totals = []
    for f in files:
        with open(os.path.join(out, f)) as fh:
            m = re.search(r"^summary: (\d+)", fh.read(), re.M)
            totals.append(int(m.group(1)) if m else 0)
    return files, totals, wal


def callgrind(snap, out, text):
    """TEXT run under callgrind in a copy of SNAPSHOT, a dump at each marker."""
    for f in os.listdir(out):
        if f.startswith("callgrind.out"):
            os.remove(os.path.join(out, f))
    vg = ["valgrind", "--tool=callgrind", "--dump-before=pg_backend_pid",
          "--callgrind-out-file=" + out + "/callgrind.out"]
    return measured(out, single(snap, out + "/data", text, vg))


def minimal(snap, n, out):
    files, totals, wal = callgrind(snap, out, minimal_script(n))
    # dumps: 1 = setup, 2 = claims (2n), 3 = completions (n), 4 = reclaim (n)
    if len(totals) < 4 or len(wal) < 3:
        sys.exit("expected 4 callgrind dumps, found %d in %s" % (len(totals), out))
    per = [totals[1] / (2 * n), totals[2] / n, totals[3] / n]
    wper = [(wal[0][0] / (2 * n), wal[0][1] / (2 * n))] + [(b / n, r / n) for b, r in wal[1:3]]
    print("minimal cycle, per item (N=%d): instructions, WAL bytes, WAL records" % n)
    for name, ins, (b, r) in zip(("min_claim", "min_complete", "reclaim"), per, wper):
        print("  %-24s %10.0f %7.0f %6.1f" % (name, ins, b, r))
    print("  cycle (reclaim + min_complete) %.0f" % (per[2] + per[1]))
    for name, f in (("min-claim", files[1]), ("min-complete", files[2]), ("min-reclaim", files[3])):
        with open(os.path.join(out, "annotate-" + name + ".txt"), "w") as fh:
            subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=99",
                            os.path.join(out, f)], stdout=fh, stderr=subprocess.DEVNULL)


def main():
    snap = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    out = sys.argv[3] if len(sys.argv) > 3 else "/tmp/cpuprobe"
    if KEYS and 2 * n > 64:  # the claim phase holds all its 2N claims: a concurrency of 64 binds
        sys.exit("KEYS=%d needs N <= 32 (the limits' concurrency is 64, and the claim phase "
                 "holds its 2N claims to the end)" % KEYS)
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o777)
    if os.environ.get("MINIMAL"):
        return minimal(snap, n, out)
    dry = single(snap, out + "/data", script(n, None) + "SELECT j.id, j.item_id FROM jobs j "
                 "WHERE j.status = 'processing' ORDER BY j.id;\n\n")
    jobs = [(int(a), int(b)) for a, b in
            re.findall(r'1: id = "(\d+)"[^\n]*\n\s*2: item_id = "(\d+)"', dry)]
    if len(jobs) != 2 * n:
        sys.exit("expected %d claimed jobs, found %d" % (2 * n, len(jobs)))
    files, totals, wal = callgrind(snap, out, script(n, jobs))
    # dumps: 1 = start + prepares, 2 = claims (2n), 3 = job_lock, 4 = job_lock + job_finish,
    # 5 = jobs_lock, 6 = jobs_lock + jobs_finish (one row each), 7 = reclaim (n claims)
    if len(totals) < 7 or len(wal) < 6:
        sys.exit("expected 7 callgrind dumps, found %d in %s" % (len(totals), out))
    per = [totals[1] / (2 * n)] + [t / n for t in totals[2:7]]
    wper = [(wal[0][0] / (2 * n), wal[0][1] / (2 * n))] + [(b / n, r / n) for b, r in wal[1:6]]
    names = ("claim_many", "job_lock", "job_lock + job_finish", "jobs_lock",
             "jobs_lock + jobs_finish", "reclaim")
    print("per item (N=%d): instructions, WAL bytes, WAL records" % n)
    for name, ins, (b, r) in zip(names, per, wper):
        print("  %-24s %10.0f %7.0f %6.1f" % (name, ins, b, r))
    print("  job_finish %.0f, jobs_finish %.0f; cycle (claim + job_lock + job_finish) %.0f"
          % (per[2] - per[1], per[4] - per[3], per[0] + per[2]))
    for name, f in (("claim", files[1]), ("lock", files[2]), ("cycle", files[3]),
                    ("batch-lock", files[4]), ("batch-cycle", files[5]), ("reclaim", files[6])):
        with open(os.path.join(out, "annotate-" + name + ".txt"), "w") as fh:
            subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=99",
                            os.path.join(out, f)], stdout=fh, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
