/* vt_pg.h - integration-test support for tests that need a PostgreSQL of their own (to read its
 * log, stop, kill or promote it): initdb into a temporary directory (as user postgres when
 * root), start on a free loopback port, and the faults. Also a loopback TCP proxy that can
 * drop a connection right after the server has committed. Test code only. */
#ifndef VERDICT_TEST_VT_PG_H
#define VERDICT_TEST_VT_PG_H

#include <stdbool.h>
#include <sys/types.h>

typedef struct vt_pg {
    char dir[128]; /* the cluster is dir/data, its log dir/postgres.log */
    int port;
    char url[160]; /* libpq keywords for database postgres */
} vt_pg;

/* Skip (exit 77) unless VERDICT_TEST_DATABASE_URL is set (CI's signal that PostgreSQL is
 * there), like every integration test. */
void vt_pg_require(void);
/* initdb a new cluster with `conf` appended to its postgresql.conf (may be NULL). */
void vt_pg_init(vt_pg *pg, const char *conf);
/* Start (pg_ctl -w); the port is kept across restarts. */
void vt_pg_start(vt_pg *pg);
/* pg_ctl stop -m mode (fast, immediate). */
void vt_pg_stop(vt_pg *pg, const char *mode);
/* Run a shell command as the cluster's owner; returns its exit status. */
int vt_pg_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The postmaster's pid (postmaster.pid), 0 when not running. */
pid_t vt_pg_postmaster(const vt_pg *pg);
/* Whether the server accepts connections now (pg_isready). */
bool vt_pg_ready(const vt_pg *pg);
/* How many lines of the server log contain `needle`. */
int vt_pg_log_count(const vt_pg *pg, const char *needle);
/* Stop (immediate) and remove the directory. */
void vt_pg_destroy(vt_pg *pg);
/* Make this cluster the one vt_db_setup() uses (sets VERDICT_TEST_DATABASE_URL). */
void vt_pg_use(const vt_pg *pg);

/* A TCP proxy on 127.0.0.1 forwarding to `port`; returns its port. */
int vt_proxy_start(int port);
/* Arm the proxy: after the client has sent `marker` `nth` times (counting from now), and then
 * a message containing "COMMIT" (if after_commit), the server's next ReadyForQuery is not
 * forwarded: both ends of that connection are closed instead. The server has done the work;
 * the client never hears of it. */
void vt_proxy_arm(const char *marker, int nth, bool after_commit);
/* Connections dropped so far. */
int vt_proxy_drops(void);
/* Connections closed so far, by either end (the client's end is closed by then). */
int vt_proxy_closed(void);

#endif
