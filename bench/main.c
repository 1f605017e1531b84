/* main.c - verdict-bench: options, then the run: its own durable PostgreSQL (unless given
 * one), a fresh database, a child verdictd, the seed, the claim → disposition matrix
 * (verdict over HTTP, the same transactions over libpq, the minimal SKIP LOCKED cycle and
 * the npm peers, interleaved cell by cell), the optional adjudicator and dashboard-read
 * modes, the report, and clean-up (verdictd stopped, database dropped, cluster stopped) on
 * every path, ^C included.
 */
#include "bench.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "verdict/util.h"

#ifndef VERDICTD_PATH
#define VERDICTD_PATH "verdictd"
#endif
#ifndef VB_PEERS_DIR
#define VB_PEERS_DIR "bench-peers"
#endif

volatile int vb_interrupted = 0;

static const char usage[] =
    "usage: verdict-bench [--database-url URL] [--verdictd PATH] [options]\n"
    "\n"
    "Without --database-url, starts its own durable PostgreSQL 15 cluster (fsync,\n"
    "synchronous_commit, full_page_writes on; shared_buffers 256MB, max_wal_size 2GB,\n"
    "wal_compression lz4, pg_stat_statements) and stops it at the end. Creates database\n"
    "verdict_bench_<pid>, starts verdictd on a free loopback port against it, seeds items\n"
    "over POST /v1/items and runs claim -> disposition cycles for every scenario x client\n"
    "count once per side, interleaved: 'verdict' over HTTP/1.1 keep-alive; 'sql', the same\n"
    "transactions through verdict's store over libpq (one connection per worker); 'minimal',\n"
    "a minimal SKIP LOCKED claim + complete on a minimal table; 'pg-boss' and 'graphile'\n"
    "(single and batchcall), the npm queues driven by bench/peers/*.mjs. Drops the database\n"
    "at the end.\n"
    "\n"
    "  --database-url URL     use this server (a superuser libpq string or URI) instead\n"
    "  --fast-db              own cluster with fsync, synchronous_commit, full_page_writes off\n"
    "  --pg-dir DIR           own cluster's directory (default: a new /tmp/verdict-bench-pg.*)\n"
    "  --pg-opt OPTS          more server options for it, after the bench's own, e.g.\n"
    "                         '-c wal_compression=off' (the setting before lz4 was recommended)\n"
    "  --no-peers             no pg-boss / graphile cells (on unless --quick; --peers forces)\n"
    "  --peers-dir DIR        harnesses + node_modules (default: the build's bench-peers)\n"
    "  --no-minimal           no minimal SKIP LOCKED cells\n"
    "  --verdictd PATH        verdictd binary (default: the one built beside this program)\n"
    "  --items N              claimable items kept in stock before each cell (100000)\n"
    "  --flow-steps K         flow steps the items are spread over; worker i uses i % K (4)\n"
    "  --clients LIST         concurrent workers per cell, e.g. 1,8,32,64 (default)\n"
    "  --duration S           measured seconds per cell (10)\n"
    "  --warmup S             unmeasured seconds before each cell (1)\n"
    "  --cycles N             measure N cycles per cell instead of a duration\n"
    "  --scenarios LIST       single,batch,batchcall,mix,single_next,batchcall_next\n"
    "                         (default all; *_next: each disposition claims the next)\n"
    "  --threads N            VERDICT_THREADS of the child (default: verdictd's, 1 x CPUs)\n"
    "  --seed N               random seed of the mix (same sequence on both sides)\n"
    "  --limit-keys N         set N limits that never bind; every HTTP claim names some\n"
    "  --keys-per-claim K     how many of them each claim names (default 2)\n"
    "  --idempotency-keys     every HTTP claim sends an Idempotency-Key of its own\n"
    "  --json                 one JSON document on stdout instead of the tables\n"
    "  --quick                smoke run: 2000 items, clients 1,8, 2 s cells, 0.5 s warm-up\n"
    "  --keep-db              do not drop the database at the end\n"
    "  --no-vacuum            skip VACUUM (ANALYZE) of items, jobs, transitions before cells\n"
    "  --verdictd-log FILE    verdictd's stderr (default /dev/null)\n"
    "  --verdictd-database-url URL  verdictd connects here instead (e.g. a PgBouncer), with\n"
    "                         the bench database's name appended; VERDICT_DB_POOL_MODE passes\n"
    "  --adjudicator          also time vd_adjudicate alone (no database needed)\n"
    "  --adjudicator-runs N   runs of about 1 s each; the median is reported (5)\n"
    "  --stats-items N        also seed N items by SQL and time GET /v1/stats and /metrics\n"
    "  --stats-flow-steps K   flow steps of those items (50)\n"
    "  --stats-repeats N      timed calls of each (50)\n"
    "\n"
    "With --adjudicator or --stats-items and no --scenarios, only those modes run.\n"
    "Exit status: 0 done; 1 setup failed or interrupted; 2 bad option; 3 some call failed\n"
    "(a non-2xx answer or an error on either side: the numbers are printed anyway).\n";

static void on_signal(int sig)
{
    (void)sig;
    vb_interrupted = 1;
}

static bool parse_long(const char *opt, const char *s, long lo, long hi, long *out)
{
    char *end = NULL;
    long v;
    errno = 0;
    v = s ? strtol(s, &end, 10) : 0;
    if (!s || errno || end == s || *end || v < lo || v > hi) {
        fprintf(stderr, "verdict-bench: %s wants an integer in %ld..%ld\n", opt, lo, hi);
        return false;
    }
    *out = v;
    return true;
}

static bool parse_double(const char *opt, const char *s, double lo, double *out)
{
    char *end = NULL;
    double v = s ? strtod(s, &end) : 0;
    if (!s || end == s || *end || !(v >= lo)) {
        fprintf(stderr, "verdict-bench: %s wants a number >= %g\n", opt, lo);
        return false;
    }
    *out = v;
    return true;
}

/* Split s at commas into out[] (each element at most cap-1 bytes); returns the count or -1. */
static int split_list(const char *s, char out[][32], int max)
{
    int n = 0;
    while (s && *s) {
        size_t len = strcspn(s, ",");
        if (n >= max || len == 0 || len >= 32)
            return -1;
        memcpy(out[n], s, len);
        out[n++][len] = '\0';
        s += len + (s[len] == ',');
    }
    return n;
}

static bool parse_clients(const char *s, vb_options *o)
{
    char parts[VB_MAX_CLIENT_COUNTS][32];
    int n = split_list(s, parts, VB_MAX_CLIENT_COUNTS);
    o->n_clients = 0;
    for (int i = 0; i < n; i++) {
        long v = 0;
        if (!parse_long("--clients", parts[i], 1, 1024, &v))
            return false;
        o->clients[o->n_clients++] = (int)v;
    }
    return o->n_clients > 0;
}

static bool parse_scenarios(const char *s, vb_options *o)
{
    char parts[VB_SCENARIO__MAX * 2][32];
    int n = split_list(s, parts, VB_SCENARIO__MAX * 2);
    memset(o->scenarios, 0, sizeof(o->scenarios));
    if (n < 0) {
        fprintf(stderr, "verdict-bench: --scenarios wants e.g. single,batch,batchcall,mix\n");
        return false;
    }
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < VB_SCENARIO__MAX && strcmp(parts[i], vb_scenario_name((vb_scenario)k)) != 0)
            k++;
        if (k == VB_SCENARIO__MAX) {
            fprintf(stderr,
                    "verdict-bench: unknown scenario '%s' (single, batch, batchcall, mix, "
                    "single_next, batchcall_next)\n",
                    parts[i]);
            return false;
        }
        o->scenarios[k] = true;
    }
    return true;
}

static void defaults(vb_options *o, bool quick)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    memset(o, 0, sizeof(*o));
    o->verdictd = VERDICTD_PATH;
    o->verdictd_log = "/dev/null";
    o->peers = !quick;
    o->minimal = true;
    o->peers_dir = VB_PEERS_DIR;
    o->items = quick ? 2000 : 100000;
    o->flow_steps = 4;
    parse_clients(quick ? "1,8" : "1,8,32,64", o);
    o->duration = quick ? 2 : 10;
    o->warmup = quick ? 0.5 : 1;
    for (int k = 0; k < VB_SCENARIO__MAX; k++)
        o->scenarios[k] = true;
    o->quick = quick;
    /* verdictd's own default (VERDICT_THREADS: one per CPU), passed explicitly so the report
     * states it; --threads measures another setting (runs before 2026-11-27: 4 x CPUs) */
    o->threads = (int)(ncpu > 0 ? ncpu : 2);
    o->seed = 42;
    o->keys_per_claim = 2;
    o->vacuum = true;
    o->adjudicator_runs = quick ? 3 : 5;
    o->stats_flow_steps = 50;
    o->stats_repeats = 50;
}

/* Returns 0 to run, 1 for --help, 2 on a bad option. */
static int parse_args(int argc, char **argv, vb_options *o)
{
    bool quick = false, scen_given = false;
    long v = 0;
    for (int i = 1; i < argc; i++)
        quick |= strcmp(argv[i], "--quick") == 0;
    defaults(o, quick);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        } else if (strcmp(a, "--fast-db") == 0 || strcmp(a, "--peers") == 0 ||
                   strcmp(a, "--no-peers") == 0 || strcmp(a, "--no-minimal") == 0) {
            takes = false;
            o->fast_db |= strcmp(a, "--fast-db") == 0;
            o->peers = strcmp(a, "--peers") == 0      ? true
                       : strcmp(a, "--no-peers") == 0 ? false
                                                      : o->peers;
            o->minimal &= strcmp(a, "--no-minimal") != 0;
        } else if (strcmp(a, "--quick") == 0 || strcmp(a, "--json") == 0 ||
                   strcmp(a, "--keep-db") == 0 || strcmp(a, "--adjudicator") == 0 ||
                   strcmp(a, "--no-vacuum") == 0 || strcmp(a, "--idempotency-keys") == 0) {
            takes = false;
            o->idem_keys |= strcmp(a, "--idempotency-keys") == 0;
            o->json |= strcmp(a, "--json") == 0;
            o->keep_db |= strcmp(a, "--keep-db") == 0;
            o->adjudicator |= strcmp(a, "--adjudicator") == 0;
            o->vacuum &= strcmp(a, "--no-vacuum") != 0;
        } else if (!val) {
            fprintf(stderr, "verdict-bench: %s needs a value (see --help)\n", a);
            return 2;
        } else if (strcmp(a, "--database-url") == 0) {
            o->database_url = val;
        } else if (strcmp(a, "--pg-dir") == 0) {
            o->pg_dir = val;
        } else if (strcmp(a, "--pg-opt") == 0) {
            o->pg_opts = val;
        } else if (strcmp(a, "--peers-dir") == 0) {
            o->peers_dir = val;
        } else if (strcmp(a, "--verdictd") == 0) {
            o->verdictd = val;
        } else if (strcmp(a, "--verdictd-log") == 0) {
            o->verdictd_log = val;
        } else if (strcmp(a, "--verdictd-database-url") == 0) {
            o->verdictd_db = val;
        } else if (strcmp(a, "--items") == 0) {
            if (!parse_long(a, val, 1, 100000000, &o->items))
                return 2;
        } else if (strcmp(a, "--flow-steps") == 0) {
            if (!parse_long(a, val, 1, 1000, &v))
                return 2;
            o->flow_steps = (int)v;
        } else if (strcmp(a, "--clients") == 0) {
            if (!parse_clients(val, o)) {
                fprintf(stderr, "verdict-bench: --clients wants e.g. 1,8,32,64 (at most %d)\n",
                        VB_MAX_CLIENT_COUNTS);
                return 2;
            }
        } else if (strcmp(a, "--duration") == 0) {
            if (!parse_double(a, val, 0.1, &o->duration))
                return 2;
        } else if (strcmp(a, "--warmup") == 0) {
            if (!parse_double(a, val, 0, &o->warmup))
                return 2;
        } else if (strcmp(a, "--cycles") == 0) {
            if (!parse_long(a, val, 1, LONG_MAX / 16, &o->cycles))
                return 2;
        } else if (strcmp(a, "--scenarios") == 0) {
            if (!parse_scenarios(val, o))
                return 2;
            scen_given = true;
        } else if (strcmp(a, "--threads") == 0) {
            if (!parse_long(a, val, 1, 256, &v))
                return 2;
            o->threads = (int)v;
        } else if (strcmp(a, "--limit-keys") == 0) {
            if (!parse_long(a, val, 0, 100000, &v))
                return 2;
            o->limit_keys = (int)v;
        } else if (strcmp(a, "--keys-per-claim") == 0) {
            if (!parse_long(a, val, 1, 16, &v))
                return 2;
            o->keys_per_claim = (int)v;
        } else if (strcmp(a, "--seed") == 0) {
            if (!parse_long(a, val, 0, 0x7fffffff, &v))
                return 2;
            o->seed = (unsigned)v;
        } else if (strcmp(a, "--adjudicator-runs") == 0) {
            if (!parse_long(a, val, 1, 64, &v))
                return 2;
            o->adjudicator_runs = (int)v;
        } else if (strcmp(a, "--stats-items") == 0) {
            if (!parse_long(a, val, 1, 100000000, &o->stats_items))
                return 2;
        } else if (strcmp(a, "--stats-flow-steps") == 0) {
            if (!parse_long(a, val, 1, 10000, &v))
                return 2;
            o->stats_flow_steps = (int)v;
        } else if (strcmp(a, "--stats-repeats") == 0) {
            if (!parse_long(a, val, 1, 100000, &v))
                return 2;
            o->stats_repeats = (int)v;
        } else {
            fprintf(stderr, "verdict-bench: unknown option %s (see --help)\n", a);
            return 2;
        }
        i += takes;
    }
    o->matrix = scen_given || !(o->adjudicator || o->stats_items > 0);
    if (o->matrix) {
        bool any = false;
        for (int k = 0; k < VB_SCENARIO__MAX; k++)
            any |= o->scenarios[k];
        o->matrix = any;
    }
    o->own_pg = (o->matrix || o->stats_items > 0) && !o->database_url;
    if (o->database_url && (o->fast_db || o->pg_dir || o->pg_opts)) {
        fprintf(stderr,
                "verdict-bench: --fast-db, --pg-dir and --pg-opt are for the cluster the bench "
                "starts itself, not with --database-url\n");
        return 2;
    }
    return 0;
}

static void describe_host(char *out, size_t cap)
{
    struct utsname u;
    char line[256], model[128] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(model, sizeof(model), "%s", colon + 2);
            model[strcspn(model, "\n")] = '\0';
            break;
        }
    }
    if (f)
        fclose(f);
    if (uname(&u) != 0)
        memset(&u, 0, sizeof(u));
    snprintf(out, cap, "%s %s %s, %ld CPUs (%s)", u.sysname, u.release, u.machine,
             sysconf(_SC_NPROCESSORS_ONLN), model);
}

/* A priming cell before the first one, not reported: the first scenario over HTTP for two
 * seconds (at most a cell's duration). The first cell otherwise ran on plans verdictd's connections
 * made while `jobs` was empty and never analysed (it cannot be analysed empty: see the ANALYZE
 * after the seed) and kept until autovacuum analysed it, minutes later in a real deployment: a
 * batch cell's disposition statement took 6.5 ms a call there against 2.3 ms in a later cell of the
 * same run. After this cell the next settle analyses `jobs` with rows in it (vb_cell_settle), which
 * makes every connection plan again. */
static bool prime(vb_env *e, const vb_options *o)
{
    vb_options po = *o;
    vb_cell c;
    for (int s = 0; s < VB_SCENARIO__MAX; s++) {
        if (!o->scenarios[s] || !vb_cell_applies(o, (vb_scenario)s, VB_MODE_HTTP))
            continue;
        po.warmup = 0;
        po.duration = o->duration < 2 ? o->duration : 2; /* a smoke run's 1 s cells: 1 s */
        po.cycles = 0;
        vb_log("priming: %s over HTTP, %d clients, %.1f s (not reported)",
               vb_scenario_name((vb_scenario)s), o->clients[0], po.duration);
        return vb_cell_run(e, &po, (vb_scenario)s, VB_MODE_HTTP, o->clients[0], &c);
    }
    return true;
}

/* Every scenario x client count, every side that applies next to each other. The order
 * within a group rotates (AB, BA...; ABC, BCA, ...) so that a drift over the run (table
 * growth, autovacuum) does not always favour the same side. */
static bool run_matrix(vb_env *e, const vb_options *o, vb_run *r)
{
    size_t cap = (size_t)VB_SCENARIO__MAX * (size_t)o->n_clients * VB_MODE__MAX;
    int pair = 0;
    r->cells = calloc(cap, sizeof(*r->cells));
    if (!r->cells)
        return false;
    vb_log("seeding %ld items over POST /v1/items (batches of 1000)", o->items);
    if (!vb_seed_http(e, o, &r->seed_seconds))
        return false;
    r->seeded = e->seq;
    /* what autovacuum would do soon after a bulk load; the claim plan depends on it. Not
     * jobs: analysed while empty, a pool connection's cached foreign-key check on jobs
     * plans a sequential scan and keeps it while the table grows (bench/README.md). */
    if (!vb_env_sql(e, "ANALYZE items"))
        return false;
    if (!prime(e, o))
        return false;
    for (int s = 0; s < VB_SCENARIO__MAX; s++) {
        if (!o->scenarios[s])
            continue;
        for (int i = 0; i < o->n_clients && !vb_interrupted; i++, pair++) {
            vb_mode modes[VB_MODE__MAX];
            int nm = 0;
            for (int k = 0; k < VB_MODE__MAX; k++)
                if (vb_cell_applies(o, (vb_scenario)s, (vb_mode)k))
                    modes[nm++] = (vb_mode)k;
            for (int j = 0; j < nm && !vb_interrupted; j++) {
                vb_mode m = modes[(j + pair) % nm];
                vb_cell *c = &r->cells[r->n_cells];
                bool ok = vb_cell_run(e, o, (vb_scenario)s, m, o->clients[i], c);
                if (!ok)
                    return false; /* an interrupted cell is not reported half-measured */
                r->n_cells++;
                vb_log("%-6s %-7s %3d clients: %8.0f cycles/s %8.0f items/s  claim p99 %6.2f "
                       "ms  disp p99 %6.2f ms  errors %ld (5xx %ld)  empty %ld",
                       vb_scenario_name(c->scenario), vb_mode_name(c->mode), c->clients,
                       c->seconds > 0 ? c->cycles / c->seconds : 0,
                       c->seconds > 0 ? c->items / c->seconds : 0, c->claim_ms[2], c->disp_ms[2],
                       c->errors, c->errors_5xx, c->empty_claims);
            }
        }
    }
    return !vb_interrupted;
}

int main(int argc, char **argv)
{
    vb_options o;
    vb_env e;
    vb_run r;
    struct sigaction sa;
    int rc = parse_args(argc, argv, &o);
    bool ok = true;
    if (rc)
        return rc == 1 ? 0 : 2;
    memset(&e, 0, sizeof(e));
    memset(&r, 0, sizeof(r));
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    vd_log_set_level(VD_LOG_ERROR); /* the store's own log lines, in this process */
    vb_quiet = false;
    r.o = &o;
    r.e = &e;
    describe_host(r.host, sizeof(r.host));
    if (ok && o.matrix && o.peers)
        ok = vb_peers_install(&o);
    if (ok && o.own_pg) {
        ok = vb_pg_start(&e, &o);
        o.database_url = e.pg.url;
    }
    if (ok && (o.matrix || o.stats_items > 0)) {
        ok = vb_env_db_create(&e, &o);
        if (ok) {
            vb_pg_describe(&e);
            vb_log("server: %s; pg_stat_statements %s", e.settings,
                   e.have_pgss ? "on" : "not preloaded (no per-statement numbers)");
        }
        if (ok && o.matrix && o.minimal)
            ok = vb_min_refill(&e, &o, 0);
        if (ok) {
            vb_log("database %s; starting %s (VERDICT_THREADS=%d)", e.db_name, o.verdictd,
                   o.threads);
            ok = vb_env_server_start(&e, &o);
        }
        if (ok) {
            e.postmaster = vb_postmaster_pid(&e);
            vb_log("verdictd pid %d on 127.0.0.1:%d, idle RSS %.1f MB; postmaster pid %d",
                   (int)e.pid, e.port, e.rss_idle_kb / 1024.0, (int)e.postmaster);
        }
    }
    if (ok && o.matrix)
        ok = run_matrix(&e, &o, &r);
    if (ok && o.matrix && o.minimal && !vb_interrupted)
        ok = vb_min_audit(&e);
    if (ok && o.adjudicator && !vb_interrupted)
        ok = r.have_adj = vb_adjudicator_run(&o, r.adj);
    if (ok && o.stats_items > 0 && !vb_interrupted)
        ok = r.have_stats = vb_stats_run(&e, &o, &r.stats);
    vb_env_server_stop(&e);
    if (!o.keep_db)
        vb_env_db_drop(&e);
    else if (e.db_created)
        vb_log("kept database %s", e.db_name);
    vb_pg_stop(&e, o.keep_db);
    if (vb_interrupted)
        vb_log("interrupted: reporting what was measured");
    if (r.n_cells || r.have_adj || r.have_stats) {
        if (o.json)
            vb_report_json(&r);
        else
            vb_report_text(&r);
    }
    /* a failed call is a result too: exit 3 so that scripts (and the smoke test) see it */
    bool failed_calls = r.have_stats && r.stats.errors > 0;
    for (size_t i = 0; i < r.n_cells; i++)
        failed_calls |= r.cells[i].errors > 0 || r.cells[i].errors_5xx > 0;
    free(r.cells);
    if (!ok || vb_interrupted)
        return 1;
    return failed_calls ? 3 : 0;
}
