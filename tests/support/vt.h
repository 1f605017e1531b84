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
 * (sql/0023_item_sources.sql) but without register transitions: a test that needs many items
 * fast. The flow step must exist. */
void vt_seed_items(const char *flow, const char *prefix, int n, int max_attempts, int max_defers);
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

/* The cmocka group fixture of a program whose tests share one verdictd `srv` (a static
 * vt_server) on a fresh database: defines `setup` (vt_db_setup, then vt_server_start with
 * the environment entries `...`, NULL-terminated: `VT_SERVER_FIXTURE(srv, NULL)` for none) and
 * `teardown` (the reverse) for cmocka_run_group_tests. */
#define VT_SERVER_FIXTURE(srv, ...)                                                                \
    static int setup(void **state)                                                                 \
    {                                                                                              \
        static const char *vt_env_[] = {__VA_ARGS__};                                              \
        (void)state;                                                                               \
        vt_db_setup();                                                                             \
        vt_server_start(&(srv), vt_env_);                                                          \
        return 0;                                                                                  \
    }                                                                                              \
    static int teardown(void **state)                                                              \
    {                                                                                              \
        (void)state;                                                                               \
        vt_server_stop(&(srv));                                                                    \
        vt_db_teardown();                                                                          \
        return 0;                                                                                  \
    }

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
