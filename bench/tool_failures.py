#!/usr/bin/env python3
"""Cost of one tool failure over HTTP with many failures stored (the failure-template store).

    python3 bench/tool_failures.py --verdictd /path/to/main/verdictd --verdictd build/verdictd \
        --database-url "$VD_PG_URL" [--stored 200000] [--requests 2000]

Creates a fresh database on that server, starts the given verdictd against it, registers and
claims 1,200 items of one flow step, reports 500 failures over HTTP (texts drawn from the
template families of tests/corpus/generate.py with fresh values), copies those rows until
`--stored` failures are stored (spread over the last 48 hours, so the incident window holds a
share of them), VACUUM ANALYZE, then times `--requests` more failures over HTTP, one client
with keep-alive, on jobs that have no failures yet. Prints p50/p90/p99 in milliseconds. Given
two verdictd (main's and this branch's), each gets its own database and server, and the timed
requests alternate between them one by one with the same texts, so a noisy machine loads both
alike. Needs psql on PATH.
"""
import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "corpus"))
import generate  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"


def psql(url, sql):
    out = subprocess.run(["psql", url, "-qAtX", "-v", "ON_ERROR_STOP=1", "-c", sql],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def with_db(url, name):
    if url.startswith("postgres"):
        u = urllib.parse.urlsplit(url)
        return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment))
    parts = [p for p in url.split() if not p.startswith("dbname=")]
    return " ".join(parts + ["dbname=" + name])


class Client:
    def __init__(self, port):
        self.port = port
        self.c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def send(self, method, path, data, headers):
        self.c.request(method, path, body=data, headers=headers)
        r = self.c.getresponse()
        return r, r.read()

    def call(self, method, path, body=None):
        data = json.dumps(body) if body is not None else None
        headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
        try:
            r, payload = self.send(method, path, data, headers)
        except (ConnectionError, http.client.HTTPException):
            # the server closed an idle keep-alive connection: reconnect once (this request's
            # time then includes the connect, rare enough not to move p50 or p99)
            self.c.close()
            self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            r, payload = self.send(method, path, data, headers)
        if r.status != 200:
            raise SystemExit(f"{method} {path}: {r.status} {payload[:300]!r}")
        return json.loads(payload)


def families():
    out = []
    for source in generate.T.values():
        out.extend(source.values())
    return out


def start(verdictd, dburl, port):
    env = dict(os.environ, VERDICT_DATABASE_URL=dburl, VERDICT_LISTEN=f"127.0.0.1:{port}",
               VERDICT_API_KEYS=f"bench:admin:{TOKEN}", VERDICT_LOG_LEVEL="warn",
               VERDICT_THREADS="4")
    proc = subprocess.Popen([verdictd, "serve"], env=env)
    for _ in range(300):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/readyz")
            if c.getresponse().status == 200:
                return proc
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise SystemExit("verdictd did not become ready")


def setup_jobs(cl, n):
    for start_at in range(0, n, 1000):
        items = [{"flow_step_id": "bench", "source_type": "rss",
                  "item_identifier": f"it-{i}"} for i in range(start_at, min(n, start_at + 1000))]
        cl.call("POST", "/v1/items", {"items": items})
    jobs = []
    while len(jobs) < n:
        r = cl.call("POST", "/v1/claims", {"flow_step_id": "bench", "worker_id": "bench",
                                            "limit": 100, "lease_seconds": 3600})
        if not r["claims"]:
            break
        jobs.extend((c["job_id"], c["claim_token"]) for c in r["claims"])
    return jobs


def fail(cl, job, fam, rng):
    generate.R.seed(rng.random())
    body = {"claim_token": job[1], "tool": rng.choice(["wiki_upsert", "search", "fetch"]),
            "args": {"q": rng.random()}, "error": generate.fill(rng.choice(fam))}
    t0 = time.perf_counter()
    cl.call("POST", f"/v1/jobs/{job[0]}/tool-failures", body)
    return (time.perf_counter() - t0) * 1000.0


def seed(dburl, stored, have):
    cols = psql(dburl, "SELECT string_agg(quote_ident(column_name), ',' ORDER BY ordinal_position)"
                       " FROM information_schema.columns WHERE table_name = 'tool_failures'"
                       " AND column_name NOT IN ('id', 'at')")
    copies = max(1, stored // have - 1)
    psql(dburl, f"INSERT INTO tool_failures ({cols}, at) SELECT {cols},"
                f" now() - random() * interval '48 hours' FROM tool_failures,"
                f" generate_series(1, {copies})")
    psql(dburl, "VACUUM ANALYZE")
    return int(psql(dburl, "SELECT count(*) FROM tool_failures"))


def prepare(args, verdictd, port):
    name = f"bench_tf_{os.getpid()}_{port}"
    psql(args.database_url, f"CREATE DATABASE {name}")
    dburl = with_db(args.database_url, name)
    proc = start(verdictd, dburl, port)
    cl, rng = Client(port), random.Random(29)
    jobs = setup_jobs(cl, 1200)
    for i in range(500):
        fail(cl, jobs[i], families(), rng)
    total = seed(dburl, args.stored, 500)
    return {"verdictd": verdictd, "name": name, "proc": proc, "client": Client(port),
            "jobs": jobs, "stored": total, "lat": []}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--verdictd", required=True, action="append",
                    help="once, or twice to compare: their requests alternate, one by one")
    ap.add_argument("--database-url", required=True)
    ap.add_argument("--stored", type=int, default=200000)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--port", type=int, default=18000 + os.getpid() % 1000)
    args = ap.parse_args()
    runs = []
    try:
        for k, v in enumerate(args.verdictd):
            runs.append(prepare(args, v, args.port + k))
        fam = families()
        rngs = [random.Random(7) for _ in runs]  # the same texts for every build
        for i in range(args.requests):
            for r, rng in zip(runs, rngs):
                r["lat"].append(fail(r["client"], r["jobs"][500 + i % 700], fam, rng))
        for r in runs:
            lat = sorted(r["lat"])
            pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]  # noqa: E731
            print(json.dumps({"verdictd": r["verdictd"], "stored": r["stored"],
                              "requests": len(lat), "p50_ms": round(pick(0.50), 3),
                              "p90_ms": round(pick(0.90), 3), "p99_ms": round(pick(0.99), 3)}))
    finally:
        for r in runs:
            r["proc"].terminate()
            r["proc"].wait()
            psql(args.database_url, f"DROP DATABASE IF EXISTS {r['name']}")


if __name__ == "__main__":
    main()
