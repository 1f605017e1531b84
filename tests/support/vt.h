/* vt.h - integration-test support: a fresh database per test program, the real verdictd
 * started as a child process on a free loopback port, an HTTP client (libcurl, keep-alive
 * per thread) and direct SQL for asserting what was stored. Test code only. */
#ifndef VERDICT_TEST_VT_H
#define VERDICT_TEST_VT_H

#include <cjson/cJSON.h>
#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define VT_ADMIN "admin-token-0123456789"
#define VT_WORKER "worker-token-0123456789"
#define VT_READER "reader-token-0123456789"
#define VT_KEYS "ops:admin:" VT_ADMIN ",bot:worker:" VT_WORKER ",dash:reader:" VT_READER

typedef struct vt_server {
    pid_t pid;
    int port;
    char base[64];
    char log_path[256];
} vt_server;

typedef struct vt_resp {
    long status;
    char *body;
    cJSON *json; /* NULL when the body is not JSON */
    char request_id[128];
    char retry_after[32];
    char content_type[128];
    bool replayed; /* Idempotent-Replayed: true */
    char www_authenticate[64];
    char traceparent[64]; /* the answer's W3C traceparent header, "" when none */
    char tracestate[128];
} vt_resp;

/* Skip the program (exit 77) unless VERDICT_TEST_DATABASE_URL is set; create a fresh
 * database for it and return its libpq connection string (static storage). */
const char *vt_db_setup(void);
/* The connection string vt_db_setup returned last. */
const char *vt_db_setup_url(void);
/* Drop the database of vt_db_setup. */
void vt_db_teardown(void);
/* Run SQL on the test database; returns the first column of the first row (malloc'd, or
 * NULL for no row / SQL NULL). Fails the test on error. */
char *vt_sql(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
long vt_sql_long(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Write n items of flow step `flow` straight into the database (identifiers prefix1 ..
 * prefixN, source type rss, the budgets given), both rows as the registration writes them
 * (sql/migrations/0023_item_sources.sql) but without register transitions: a test that needs many
 * items fast. The flow step must exist. */
void vt_seed_items(const char *flow, const char *prefix, int n, int max_attempts, int max_defers);
/* A flow step (if new) with n items (identifiers flow || 1..n; 5 attempts, 3 defers), written
 * straight into the database. */
void vt_seed_flow(const char *flow, int n);
/* Sleep for ms milliseconds (a test waiting for a server-side timer; never an assertion). */
void vt_sleep_ms(long ms);
/* Run sql on a connection of the test's own (a transaction held open, say); fails the test
 * unless PostgreSQL answered it without error. Returns the result: PQclear it. */
PGresult *vt_pq_ok(PGconn *c, const char *sql);

/* Start verdictd against the test database with extra environment entries ("K=V", NULL
 * terminated; may be NULL). Waits until /healthz answers. */
void vt_server_start(vt_server *s, const char *const *env);
/* The same, listening on host (e.g. "0.0.0.0"); the test still talks to 127.0.0.1. */
void vt_server_start_listen(vt_server *s, const char *host, const char *const *env);
/* SIGTERM, wait, assert exit status 0 (also proves no leak under ASan). */
void vt_server_stop(vt_server *s);

/* The fixture of every integration program (vt_fixture.c): a fresh database (on the PostgreSQL
 * of VERDICT_TEST_DATABASE_URL, or on a cluster of the program's own), the verdictd the tests
 * share with the usual keys (VT_KEYS), reached directly, through the dropping proxy (vt_pg.h) or
 * through PgBouncer; teardown stops them and drops the database. Without
 * VERDICT_TEST_DATABASE_URL the program skips (exit 77). One fixture per program. */
#define VT_FIXTURE_SERVERS 4

typedef enum vt_route {
    VT_ROUTE_DIRECT,    /* verdictd connects to the database itself */
    VT_ROUTE_PROXY,     /* through vt_proxy_start's proxy (vt_proxy_arm drops a connection) */
    VT_ROUTE_PGBOUNCER, /* through a PgBouncer in transaction mode (skip, exit 77, without it) */
} vt_route;

struct vt_pg;

typedef struct vt_fixture {
    /* The options a program sets. */
    vt_server *srv[VT_FIXTURE_SERVERS]; /* started by setup in this order; none: the tests start
                                         * their own */
    const char *const *env;             /* extra "K=V" of every verdictd the fixture starts,
                                         * NULL-terminated (VT_ENV); NULL for none */
    vt_route route;                     /* how those verdictd reach PostgreSQL */
    struct vt_pg *pg;    /* non-NULL: initdb a cluster of the program's own into *pg and use it */
    const char *pg_conf; /* lines for that cluster's postgresql.conf (may be NULL) */
    void (*ready)(void); /* run once the servers answer: what every test of the program shares */
    /* What setup made (read-only for the program). */
    const char *url;         /* the database's libpq string (also vt_db_setup_url()) */
    char env_url[800];       /* VERDICT_DATABASE_URL=... of a routed verdictd, "" direct */
    const char *env_all[40]; /* env_url and env, as verdictd receives them */
    char pgbouncer_dir[64];  /* its config, log and pid file, "" when not started */
} vt_fixture;

/* A NULL-terminated environment list for vt_fixture.env: VT_ENV("VERDICT_THREADS=2"). */
#define VT_ENV(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Open the database (and cluster, and route), start srv[..], run ready. Returns 0. */
int vt_fixture_setup(vt_fixture *f);
/* Stop the servers (in reverse, asserting a clean exit), the route, drop the database and the
 * cluster. Returns 0. */
int vt_fixture_teardown(vt_fixture *f);
/* Send the verdictd started from now on through route r (the proxy or PgBouncer); returns 0,
 * or 77 when PgBouncer is not installed. */
int vt_fixture_route(vt_fixture *f, vt_route r);
/* Start one more verdictd like the fixture's own (same database, route and env): a second
 * replica. The test stops it with vt_server_stop. */
void vt_replica_start(vt_server *s);

/* The cmocka group fixture: defines `static vt_fixture vt_fx` with the options given, `setup`
 * and `teardown` for cmocka_run_group_tests. VT_FIXTURE(.srv = {&srv}, .env = VT_ENV("K=V")) */
#define VT_FIXTURE(...)                                                                            \
    static vt_fixture vt_fx = {__VA_ARGS__};                                                       \
    static int setup(void **state)                                                                 \
    {                                                                                              \
        (void)state;                                                                               \
        return vt_fixture_setup(&vt_fx);                                                           \
    }                                                                                              \
    static int teardown(void **state)                                                              \
    {                                                                                              \
        (void)state;                                                                               \
        return vt_fixture_teardown(&vt_fx);                                                        \
    }

/* The common case, one verdictd `server` with the environment entries `...` (NULL-terminated:
 * `VT_SERVER_FIXTURE(srv, NULL)` for none): VT_FIXTURE(.srv = {&server}, .env = ...). */
#define VT_SERVER_FIXTURE(server, ...)                                                             \
    VT_FIXTURE(.srv = {&(server)}, .env = (const char *const[]){__VA_ARGS__})

/* One HTTP request. token may be NULL; body may be NULL; extra_headers NULL-terminated. */
vt_resp vt_http(const vt_server *s, const char *method, const char *path, const char *token,
                const char *body, const char *const *extra_headers);
void vt_resp_free(vt_resp *r);
/* Release the calling thread's HTTP connection (call at the end of every client thread). */
void vt_http_thread_cleanup(void);
/* Assert an error envelope with the given status and code. */
void vt_assert_error(const vt_resp *r, long status, const char *code);

/* Convenience accessors on r->json. */
const char *vt_str(const cJSON *o, const char *path);
double vt_num(const cJSON *o, const char *path);

#endif
