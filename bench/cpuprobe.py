#!/usr/bin/env python3
"""bench/cpuprobe.py SNAPSHOT [N] [OUT]: PostgreSQL instructions per statement of the
single-item cycle, counted by callgrind (deterministic on a busy machine).

SNAPSHOT is a stopped data directory holding database `seed` migrated by verdictd with at
least N + 1 claimable items in flow step bench_0 (bench/cpuprobe.sh makes one and runs this). The probe
copies it twice: a dry run in `postgres --single` learns the job ids the claims will take,
then a run under `valgrind --tool=callgrind` replays, as verdictd sends them (the statement
texts of sql/statements/, prepared; the same BEGIN / SET LOCAL / COMMIT around them):
  phase claim:  N x claim_many of one (the coalescer's single claim, generic plan)
  phase lock:   N x job_lock alone
  phase cycle:  N x job_lock + job_finish (a completion, the parameters verdictd sends)
A marker statement (SELECT pg_backend_pid(), pg_current_wal_insert_lsn()) between phases
makes callgrind dump there, so each phase's instructions are in a file of their own, and
gives the WAL range of each phase (bytes, and records counted by pg_waldump; the run starts
after a checkpoint, so first touches of pages pay full-page images, alike in every run). Prints instructions per item per
phase, job_finish = cycle - lock, and the top functions of each phase into OUT (default
/tmp/cpuprobe). PRE_SQL=FILE runs FILE's statements (each ending ";" and a blank line)
first, in the same session (a variant of a function or a constraint, to compare);
STATEMENTS=DIR reads the statement texts from DIR (another commit's sql/statements)."""
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


CLAIM = ('[{"ord": 0, "span": "475b3bcf681af071", "actor": "anonymous", "lease": 300, '
         '"trace": "5954a66037d3355651d85a90282232e6", "worker": "w1", "version": null}]')
TOKEN = "2ab41722-1604-4934-9517-8f73d7617ddf"
REQUEST = '{"claim_token": "%s", "disposition": "complete"}' % TOKEN
STD = "Recorded: completed. The item is processed. Stop now."


MARK = "SELECT pg_backend_pid(), pg_current_wal_insert_lsn()"


def claim_tx():
    return ["BEGIN", "SET LOCAL plan_cache_mode = force_generic_plan",
            "EXECUTE claim_many(%s, %s, 1)" % (lit("bench_0"), lit(CLAIM)), "COMMIT"]


def lock(job):
    return "EXECUTE job_lock(%d, %s, %s)" % (job, lit(TOKEN), lit(REQUEST))


def finish(job, item):
    p = [job, item, "processed", "completed", "complete", "complete", None, None, 0, 0, 0,
         "f", "anonymous", None, None, REQUEST, "complete", "f", None, "f", None, STD, "t",
         None, "006772cf66e3a700156c33a2502d1bfd"]
    return "EXECUTE job_finish(%s)" % ", ".join(lit(x) for x in p)


def script(n, jobs):
    out = []
    if os.environ.get("PRE_SQL"):
        with open(os.environ["PRE_SQL"]) as f:
            out += [x.strip() for x in f.read().split(";\n\n") if x.strip()]
    out += [prepare(s) for s in ("claim_many", "job_lock", "job_finish")]
    out.append(MARK)
    for _ in range(n):
        out += claim_tx()
    if jobs is not None:
        out.append(MARK)
        for job, _item in jobs:
            out += ["BEGIN", "SET LOCAL enable_seqscan = off", lock(job), "COMMIT"]
        out.append(MARK)
        for job, item in jobs:
            out += ["BEGIN", "SET LOCAL enable_seqscan = off", lock(job), finish(job, item),
                    "COMMIT"]
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
        sys.exit("single-user run failed:\n" + (r.stderr + r.stdout)[-3000:])
    return r.stdout


def main():
    snap = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 200
    out = sys.argv[3] if len(sys.argv) > 3 else "/tmp/cpuprobe"
    os.makedirs(out, exist_ok=True)
    os.chmod(out, 0o777)
    dry = single(snap, out + "/data", script(n, None) + "SELECT j.id, j.item_id FROM jobs j "
                 "WHERE j.status = 'processing' ORDER BY j.id;\n\n")
    jobs = [(int(a), int(b)) for a, b in
            re.findall(r'1: id = "(\d+)"[^\n]*\n\s*2: item_id = "(\d+)"', dry)]
    if len(jobs) != n:
        sys.exit("expected %d claimed jobs, found %d" % (n, len(jobs)))
    for f in os.listdir(out):
        if f.startswith("callgrind.out"):
            os.remove(os.path.join(out, f))
    vg = ["valgrind", "--tool=callgrind", "--dump-before=pg_backend_pid",
          "--callgrind-out-file=" + out + "/callgrind.out"]
    text = single(snap, out + "/data", script(n, jobs), vg)
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
    # dumps: 1 = start + prepares, 2 = claims, 3 = locks, 4 = lock + finish
    if len(totals) < 4:
        sys.exit("expected 4 callgrind dumps, found %d in %s" % (len(totals), out))
    claim, lk, cyc = totals[1] / n, totals[2] / n, totals[3] / n
    print("instructions per item (N=%d): claim_many %.0f  job_lock %.0f  job_finish %.0f  "
          "cycle %.0f" % (n, claim, lk, cyc - lk, claim + cyc))
    if len(wal) >= 3:
        print("WAL B / records per item: claim_many %.0f / %.1f  job_lock %.0f / %.1f  "
              "job_lock + job_finish %.0f / %.1f" % (wal[0][0] / n, wal[0][1] / n, wal[1][0] / n,
                                                     wal[1][1] / n, wal[2][0] / n, wal[2][1] / n))
    for name, f in (("claim", files[1]), ("lock", files[2]), ("cycle", files[3])):
        with open(os.path.join(out, "annotate-" + name + ".txt"), "w") as fh:
            subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=99",
                            os.path.join(out, f)], stdout=fh, stderr=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
