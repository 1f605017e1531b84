/* bench.h - verdict-bench's internal interfaces: options, the lean HTTP/1.1 client, the
 * environment (its own PostgreSQL cluster or a given one, database, child verdictd, /proc
 * readers, WAL and commit counters), the claim → disposition cells (verdict, its statements,
 * the minimal SQL cycle, the npm peers), the extra modes (adjudicator, stats) and the report. Only
 * bench/ includes it; the program uses verdict's public headers (each layer's src/LAYER/include/)
 * and no layer's private file.
 */
#ifndef VERDICT_BENCH_H
#define VERDICT_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <cjson/cJSON.h>

#define VB_MAX_CLIENT_COUNTS 16
#define VB_MAX_BATCH 10
#define VB_ACTOR "bench" /* the API key name, so both sides write the same actor */

/* ---- options ------------------------------------------------------------------------- */

typedef enum vb_scenario {
    VB_SCENARIO_SINGLE = 0,
    VB_SCENARIO_BATCH,      /* limit 10 + 10 single dispositions */
    VB_SCENARIO_BATCH_CALL, /* limit 10 + one POST /v1/dispositions */
    VB_SCENARIO_MIX,
    VB_SCENARIO_SINGLE_NEXT,     /* single, each disposition claims the next (claim_next: 1) */
    VB_SCENARIO_BATCH_CALL_NEXT, /* batchcall, each batch claims the next 10 (claim_next: 10) */
    VB_SCENARIO__MAX
} vb_scenario;

/* Who does the claim → disposition cycle: verdict over HTTP, verdict's own statements over
 * libpq, the minimal SKIP LOCKED cycle on a minimal table, and the npm peers (bench/peers/). */
typedef enum vb_mode {
    VB_MODE_HTTP = 0,
    VB_MODE_SQL,
    VB_MODE_MIN,
    VB_MODE_PGBOSS,
    VB_MODE_GRAPHILE,
    VB_MODE__MAX
} vb_mode;

typedef struct vb_options {
    const char *database_url; /* admin connection (libpq keyword string or URI) */
    const char *verdictd;     /* path of the verdictd binary */
    const char *verdictd_log; /* where verdictd's stderr goes */
    const char *pg_dir;       /* the cluster the bench starts (no --database-url) */
    bool fast_db;             /* that cluster without fsync (the pre-issue-21 setting) */
    const char *pg_opts;      /* more server options of that cluster (--pg-opt), last */
    bool own_pg;              /* no --database-url: the bench starts its own cluster */
    bool peers;               /* pg-boss and graphile-worker cells (bench/peers/) */
    bool minimal;             /* the minimal SKIP LOCKED cycle's cells */
    const char *peers_dir;    /* package.json, the harnesses and node_modules */
    const char *verdictd_db;  /* --verdictd-database-url: verdictd's own URL (e.g. a PgBouncer) */
    long items;               /* claimable items kept in stock before every cell */
    int flow_steps;
    int clients[VB_MAX_CLIENT_COUNTS];
    int n_clients;
    double duration; /* measured seconds per cell (when cycles == 0) */
    double warmup;   /* unmeasured seconds before each cell */
    long cycles;     /* > 0: measured cycles per cell instead of a duration */
    bool scenarios[VB_SCENARIO__MAX];
    bool matrix; /* run the claim → disposition matrix */
    bool json;
    bool quick;
    bool keep_db;
    bool vacuum; /* VACUUM (ANALYZE) the hot tables before every cell */
    int threads; /* VERDICT_THREADS for the child */
    unsigned seed;
    bool adjudicator; /* extra mode (a) */
    int adjudicator_runs;
    long stats_items; /* extra mode (b): > 0 runs it */
    int stats_flow_steps;
    int stats_repeats;
    int limit_keys;     /* > 0: that many limits that never bind (bench-k0..), set before */
    int keys_per_claim; /* each HTTP claim names this many of them (1..16, default 2) */
    bool idem_keys;     /* every HTTP claim sends an Idempotency-Key of its own */
} vb_options;

const char *vb_scenario_name(vb_scenario s);
const char *vb_mode_name(vb_mode m);

/* ---- small utilities (util.c) -------------------------------------------------------- */

double vb_now(void); /* monotonic seconds */
void vb_sleep(double seconds);
/* A growable array of latencies in microseconds. */
typedef struct vb_samples {
    uint32_t *v;
    size_t n, cap;
} vb_samples;
bool vb_samples_add(vb_samples *s, double seconds);
/* Append all of src to dst (dst grows); false on allocation failure. */
bool vb_samples_merge(vb_samples *dst, const vb_samples *src);
/* Sorts s and writes the p-th percentile (nearest rank, p in (0,100]) in ms; 0 when empty. */
double vb_samples_pct(vb_samples *s, double p);
void vb_samples_free(vb_samples *s);
/* xorshift64*: a per-worker generator, so both modes see the same sequence. */
uint64_t vb_rand(uint64_t *state);
/* printf into a malloc'd string; NULL on failure. */
char *vb_strdupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void vb_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern bool vb_quiet; /* progress lines off */

/* ---- the HTTP/1.1 client (http.c) ----------------------------------------------------- */

/* One persistent connection. Not thread-safe: one per worker. */
typedef struct vb_http {
    int fd;
    int port;
    char auth[160]; /* "Authorization: Bearer ...\r\n" or "" */
    char *out;      /* request buffer */
    size_t out_cap;
    char *in; /* response buffer: headers then body */
    size_t in_cap, in_len;
    char *body; /* points into in; NUL-terminated */
    size_t body_len;
    long reconnects;
    char extra[128]; /* one more header line ("Name: value\r\n") for the next request, or "" */
} vb_http;

/* Connect to 127.0.0.1:port; token may be NULL. Returns false (and leaves h closed) on
 * failure. */
bool vb_http_open(vb_http *h, int port, const char *token);
/* Send one request and read the whole answer. Returns the HTTP status, or -1 on an I/O or
 * protocol failure (the connection is reset; the next call reconnects). body may be NULL. */
int vb_http_request(vb_http *h, const char *method, const char *path, const char *body,
                    size_t body_len);
void vb_http_close(vb_http *h);

/* ---- environment (env.c) -------------------------------------------------------------- */

/* The PostgreSQL cluster the bench started (own_pg). */
typedef struct vb_pg {
    char dir[512]; /* data/ and the socket live here */
    char url[256]; /* admin connection, database postgres */
    bool made_dir; /* mkdtemp'd: removed at the end */
    bool started;
} vb_pg;

typedef struct vb_env {
    vb_pg pg;
    char settings[512]; /* the server's durability settings, as reported */
    bool have_pgss;     /* pg_stat_statements loaded and created in the bench database */
    double peer_peak[VB_MODE__MAX];     /* items/s of the fastest cell of each side so far */
    char peer_system[VB_MODE__MAX][48]; /* "pg-boss 12.38.0" as the harness reports it */
    char admin_url[1024];
    char db_url[1024];
    char db_name[64];
    char child_db[512]; /* --verdictd-database-url, or empty: verdictd uses db_url */
    bool db_created;
    pid_t pid; /* verdictd, 0 when not running */
    int port;
    int threads;
    int db_pool;
    char token[40];
    long seq;                /* identifiers already used by refills */
    long rss_idle_kb;        /* right after readiness, before any load */
    double peak_items_per_s; /* the fastest cell so far: sizes the next refill */
    pid_t postmaster;        /* 0 when PostgreSQL is not on this host */
    int cells_run;
} vb_env;

/* Create verdict_bench_<pid> through opts->database_url. */
bool vb_env_db_create(vb_env *e, const vb_options *o);
/* Drop it (WITH (FORCE)); safe when it was never created. */
void vb_env_db_drop(vb_env *e);
/* Spawn verdictd on a free loopback port with an admin API key; waits for /readyz. */
bool vb_env_server_start(vb_env *e, const vb_options *o);
/* SIGTERM, wait, SIGKILL after 10 s. */
void vb_env_server_stop(vb_env *e);
/* Run one SQL command (or several, simple query protocol) on the bench database. */
bool vb_env_sql(const vb_env *e, const char *sql);
/* Run a query returning one integer; -1 on failure. */
long vb_env_sql_long(const vb_env *e, const char *sql);
/* A free loopback TCP port, or -1. */
int vb_free_port(void);

/* ---- the bench's own cluster and the server's counters (pg.c) ---------------------------- */

/* initdb (first use of the directory) and start a cluster on a free loopback port; durable
 * unless o->fast_db. Fills e->pg (its url becomes the admin URL). */
bool vb_pg_start(vb_env *e, const vb_options *o);
/* pg_ctl stop, and remove the directory if the bench made it (unless keep). */
void vb_pg_stop(vb_env *e, bool keep);
/* Read fsync, synchronous_commit, full_page_writes, shared_buffers, ... into e->settings and
 * create pg_stat_statements in the bench database when the server preloads it. */
void vb_pg_describe(vb_env *e);

/* Cluster-wide WAL position and counters and the bench database's commits at one moment. */
typedef struct vb_dbstat {
    double wal_lsn;                    /* pg_current_wal_insert_lsn() in bytes: exact */
    double wal_records, wal_fpi;       /* pg_stat_wal: flushed by backends about once a second */
    double xact_commit, xact_rollback; /* pg_stat_database: the same */
    bool ok;
} vb_dbstat;
bool vb_dbstat_read(const vb_env *e, vb_dbstat *out);

#define VB_MAX_STMTS 10
/* One pg_stat_statements entry of the bench database over a measured window. */
typedef struct vb_stmt {
    char query[200]; /* normalised text, whitespace folded, cut */
    bool toplevel;
    double calls, mean_ms, wal_bytes, wal_records, wal_fpi, rows;
} vb_stmt;
/* pg_stat_statements_reset(): called when a window opens (when e->have_pgss). */
void vb_pgss_reset(const vb_env *e);
/* The top statements by WAL bytes (then time) into out; returns the count. *top_wal gets
 * the WAL bytes of all top-level statements. */
int vb_pgss_collect(const vb_env *e, vb_stmt *out, int max, double *top_wal);

/* /proc readers for a process and the host. */
double vb_proc_cpu_seconds(pid_t pid); /* utime+stime; -1 when unreadable */
long vb_proc_rss_kb(pid_t pid);        /* VmRSS; -1 when unreadable */
/* The PostgreSQL server's CPU: the postmaster, its live children and those it reaped. */
double vb_postgres_cpu_seconds(pid_t postmaster);
/* The postmaster serving the bench database when it runs on this host, else 0. */
pid_t vb_postmaster_pid(const vb_env *e);
bool vb_host_cpu(double *busy, double *total); /* /proc/stat jiffies */
double vb_self_cpu_seconds(void);              /* this process, every thread */

/* ---- cells (cell.c) ------------------------------------------------------------------- */

typedef struct vb_cell {
    vb_scenario scenario;
    vb_mode mode;
    int clients;
    double seconds;     /* measured wall time */
    long cycles, items; /* completed in the measured window */
    long claim_calls, disp_calls;
    long errors, errors_5xx; /* non-2xx (5xx included) / 5xx; I/O failures count as 5xx */
    long empty_claims;       /* claims that returned no item */
    long reconnects;
    double claim_ms[3], disp_ms[3]; /* p50, p95, p99 */
    double server_cpu_s;            /* verdictd utime+stime during the measured window */
    double pg_cpu_s;                /* the PostgreSQL server (postmaster and children) */
    double bench_cpu_s;             /* this program, every thread */
    double host_busy;               /* 0..1 of all CPUs */
    long rss_idle_kb, rss_peak_kb;
    vb_dbstat db_before, db_after; /* WAL and commits around the measured window */
    vb_stmt stmts[VB_MAX_STMTS];
    int n_stmts;
    double pgss_top_wal; /* WAL bytes of the window's top-level statements */
    char first_error[200];
} vb_cell;

/* Top up every flow step so that a cell cannot run out of claimable items. */
bool vb_stock_refill(vb_env *e, const vb_options *o, long per_step);
/* Seed opts->items items over POST /v1/items in batches of 1000. *rate gets items/s. */
bool vb_seed_http(vb_env *e, const vb_options *o, double *seconds);
/* Run one cell. */
bool vb_cell_run(vb_env *e, const vb_options *o, vb_scenario s, vb_mode m, int clients,
                 vb_cell *out);
/* VACUUM (ANALYZE) and CHECKPOINT before a cell (see cell.c). */
bool vb_cell_settle(vb_env *e, const vb_options *o);
/* Whether side m runs scenario s in this run (the peers run single and batchcall only). */
bool vb_cell_applies(const vb_options *o, vb_scenario s, vb_mode m);
/* CPU and server counters at the edges of a measured window; proc is the side's own
 * process (verdictd, a peer's node), 0 when none. */
void vb_window_open(const vb_env *e, pid_t proc, double snap[5], vb_cell *c);
void vb_window_close(const vb_env *e, pid_t proc, const double before[5], vb_cell *c);

/* ---- the minimal SKIP LOCKED cycle (minimal.c) --------------------------------------------- */

typedef struct vb_min vb_min; /* one connection with its prepared statements */
/* Create the minimal table (once) and top every queue bench_K up to per_step jobs. */
bool vb_min_refill(vb_env *e, const vb_options *o, long per_step);
vb_min *vb_min_connect(const vb_env *e);
void vb_min_close(vb_min *m);
/* Claim up to limit jobs of queue (one statement, autocommit); 200 or 500. */
int vb_min_claim(vb_min *m, const char *queue, const char *worker, int limit, int64_t *ids, int *n);
/* Complete ids (one statement); 200 when every one was running, 409 when not, 500. */
int vb_min_complete(vb_min *m, const int64_t *ids, int n);
const char *vb_min_error(vb_min *m);
/* After the run: log the jobs done and left running; false when one is left running (lost). */
bool vb_min_audit(const vb_env *e);

/* ---- the npm peers (peers.c) --------------------------------------------------------------- */

/* npm ci into o->peers_dir when its node_modules are missing. */
bool vb_peers_install(const vb_options *o);
/* One cell of pg-boss or graphile-worker: their harness in node, closed-loop. */
bool vb_peer_run(vb_env *e, const vb_options *o, vb_scenario s, vb_mode m, int clients,
                 vb_cell *out);

/* ---- extra modes (extras.c) ----------------------------------------------------------- */

typedef struct vb_adj_result {
    const char *name;
    size_t input_bytes;
    double median_per_s, min_per_s, max_per_s;
    const char *outcome;
    int runs;
} vb_adj_result;

/* Runs the adjudicator benchmark; fills res[0] (stream-json stdout) and res[1] (parsed). */
bool vb_adjudicator_run(const vb_options *o, vb_adj_result res[2]);

typedef struct vb_stats_result {
    long items;
    int flow_steps;
    long jobs;
    double seed_seconds;
    double stats_ms[3], metrics_ms[3]; /* median, p99, max */
    size_t stats_bytes, metrics_bytes;
    long errors;
    int repeats;
} vb_stats_result;

bool vb_stats_run(vb_env *e, const vb_options *o, vb_stats_result *out);

/* ---- report (report.c) ---------------------------------------------------------------- */

typedef struct vb_run {
    const vb_options *o;
    const vb_env *e;
    double seed_seconds;
    long seeded;
    vb_cell *cells;
    size_t n_cells;
    bool have_adj;
    vb_adj_result adj[2];
    bool have_stats;
    vb_stats_result stats;
    char host[256];
} vb_run;

void vb_report_text(const vb_run *r);
void vb_report_json(const vb_run *r);

#endif
