/* vt_fixture.c - the one fixture of the integration programs (vt.h, "The fixture"): the
 * database, an optional PostgreSQL cluster of the program's own, the route verdictd takes to
 * PostgreSQL (direct, the dropping proxy, PgBouncer), the servers the tests share, a second
 * replica on demand, and the teardown of all of it. Test code only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt.h"
#include "vt_pg.h"

#define PGBOUNCER_BIN "/usr/sbin/pgbouncer"

static vt_fixture *current; /* the fixture setup opened: vt_replica_start's */

static void fixture_fatal(const char *what)
{
    fprintf(stderr, "vt_fixture: %s\n", what);
    exit(1);
}

/* A cluster of the program's own is removed even when a failed check ends the program. */
static void destroy_cluster_at_exit(void)
{
    if (current && current->pg)
        vt_pg_destroy(current->pg);
}

/* The port of a libpq keyword string (5432 when it names none). */
static int url_port(const char *url)
{
    const char *p = strstr(url, "port=");
    return p ? (int)strtol(p + 5, NULL, 10) : 5432;
}

/* Rebuild env_all: the route's VERDICT_DATABASE_URL (when routed), then the program's env. */
static void compose_env(vt_fixture *f)
{
    size_t n = 0;
    if (f->env_url[0])
        f->env_all[n++] = f->env_url;
    for (size_t i = 0; f->env && f->env[i]; i++) {
        if (n + 1 >= sizeof(f->env_all) / sizeof(f->env_all[0]))
            fixture_fatal("too many environment entries");
        f->env_all[n++] = f->env[i];
    }
    f->env_all[n] = NULL;
}

/* Write a PgBouncer config (transaction mode, trust) for the test database into a new
 * directory and start it (as postgres when root: it refuses root); returns its port, 0 when
 * it did not start. */
static int pgbouncer_start(vt_fixture *f)
{
    const char *db = strstr(f->url, "dbname=vt_");
    char path[128];
    int port = 20000 + (int)(((unsigned)rand() ^ (unsigned)getpid()) % 12000u);
    snprintf(f->pgbouncer_dir, sizeof(f->pgbouncer_dir), "/tmp/vt-pgb-XXXXXX");
    if (!db || !mkdtemp(f->pgbouncer_dir))
        return 0;
    snprintf(path, sizeof(path), "%s/pgbouncer.ini", f->pgbouncer_dir);
    FILE *ini = fopen(path, "w");
    if (!ini)
        return 0;
    fprintf(ini,
            "[databases]\n%s = host=127.0.0.1 port=%d dbname=%s\n[pgbouncer]\n"
            "listen_addr = 127.0.0.1\nlisten_port = %d\nunix_socket_dir =\n"
            "auth_type = trust\nauth_file = %s/users.txt\npool_mode = transaction\n"
            "default_pool_size = 8\nmax_client_conn = 200\nlogfile = %s/pgbouncer.log\n"
            "pidfile = %s/pgbouncer.pid\nadmin_users = postgres\n",
            db + 7, url_port(f->url), db + 7, port, f->pgbouncer_dir, f->pgbouncer_dir,
            f->pgbouncer_dir);
    fclose(ini);
    snprintf(path, sizeof(path), "%s/users.txt", f->pgbouncer_dir);
    FILE *users = fopen(path, "w");
    if (!users)
        return 0;
    fprintf(users, "\"postgres\" \"\"\n");
    fclose(users);
    if (getuid() == 0) {
        char cmd[160];
        snprintf(cmd, sizeof(cmd), "chown -R postgres:postgres %s", f->pgbouncer_dir);
        if (system(cmd) != 0)
            return 0;
    }
    if (vt_pg_sh("pgbouncer -d %s/pgbouncer.ini", f->pgbouncer_dir) != 0)
        return 0;
    snprintf(path, sizeof(path), "%s/pgbouncer.pid", f->pgbouncer_dir);
    for (int i = 0; i < 50 && access(path, F_OK) != 0; i++) {
        struct timespec ts = {0, 20000000};
        nanosleep(&ts, NULL);
    }
    return port;
}

static void pgbouncer_stop(vt_fixture *f)
{
    char cmd[100];
    if (!f->pgbouncer_dir[0])
        return;
    vt_pg_sh("kill $(cat %s/pgbouncer.pid) 2>/dev/null; sleep 0.3", f->pgbouncer_dir);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->pgbouncer_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", f->pgbouncer_dir);
    f->pgbouncer_dir[0] = '\0';
}

int vt_fixture_route(vt_fixture *f, vt_route r)
{
    f->route = r;
    f->env_url[0] = '\0';
    if (r == VT_ROUTE_PROXY) {
        int proxy = vt_proxy_start(url_port(f->url));
        snprintf(f->env_url, sizeof(f->env_url),
                 "VERDICT_DATABASE_URL=%s port=%d sslmode=disable gssencmode=disable", f->url,
                 proxy);
    } else if (r == VT_ROUTE_PGBOUNCER) {
        if (access(PGBOUNCER_BIN, X_OK) != 0) {
            fprintf(stderr, "pgbouncer is not installed: skipping\n");
            return 77;
        }
        int port = pgbouncer_start(f);
        if (!port)
            fixture_fatal("pgbouncer did not start");
        snprintf(f->env_url, sizeof(f->env_url),
                 "VERDICT_DATABASE_URL=host=127.0.0.1 port=%d user=postgres %s sslmode=disable",
                 port, strstr(f->url, "dbname=vt_"));
    }
    compose_env(f);
    return 0;
}

int vt_fixture_setup(vt_fixture *f)
{
    current = f;
    if (f->pg) {
        vt_pg_require();
        vt_pg_init(f->pg, f->pg_conf);
        atexit(destroy_cluster_at_exit);
        vt_pg_start(f->pg);
        vt_pg_use(f->pg);
    }
    f->url = vt_db_setup();
    if (vt_fixture_route(f, f->route) == 77) {
        vt_fixture_teardown(f);
        exit(77);
    }
    for (int i = 0; i < VT_FIXTURE_SERVERS && f->srv[i]; i++)
        vt_server_start(f->srv[i], f->env_all);
    if (f->ready)
        f->ready();
    return 0;
}

int vt_fixture_teardown(vt_fixture *f)
{
    for (int i = VT_FIXTURE_SERVERS - 1; i >= 0; i--)
        if (f->srv[i])
            vt_server_stop(f->srv[i]);
    pgbouncer_stop(f);
    vt_db_teardown();
    if (f->pg)
        vt_pg_destroy(f->pg);
    return 0;
}

void vt_replica_start(vt_server *s)
{
    if (!current)
        fixture_fatal("vt_replica_start before the fixture's setup");
    vt_server_start(s, current->env_all);
}
