/* pg.c - the PostgreSQL side of a run: the cluster the bench starts for itself when no
 * --database-url is given (initdb + pg_ctl, durable with the settings bench/README.md
 * documents, or --fast-db's fsync=off), what the server runs with, and the counters read
 * around each measured window: WAL position and records, commits, pg_stat_statements.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef VB_PG_BIN
#define VB_PG_BIN "/usr/lib/postgresql/15/bin"
#endif

/* Durable: PostgreSQL's defaults (fsync, synchronous_commit, full_page_writes on) plus
 * what the README recommends for production (sizes, wal_compression; bench/README.md, "The
 * database"). */
static const char durable_opts[] =
    "-c shared_buffers=256MB -c max_wal_size=2GB -c max_connections=200 -c wal_compression=lz4"
    " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all";
static const char fast_opts[] = " -c fsync=off -c synchronous_commit=off -c full_page_writes=off";

/* Run argv (as the postgres user when we are root: initdb refuses root), output to log.
 * Returns the exit status, or -1. */
static int run_cmd(char *const argv[], const char *log)
{
    char *wrapped[16];
    char *const *use = argv;
    int st = 0;
    pid_t pid;
    if (geteuid() == 0) {
        int n = 0;
        wrapped[n++] = (char *)"runuser";
        wrapped[n++] = (char *)"-u";
        wrapped[n++] = (char *)"postgres";
        wrapped[n++] = (char *)"--";
        for (int i = 0; argv[i] && n < 15; i++)
            wrapped[n++] = argv[i];
        wrapped[n] = NULL;
        use = wrapped;
    }
    pid = fork();
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execvp(use[0], use);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool prepare_dir(vb_env *e, const vb_options *o)
{
    struct passwd *pw = geteuid() == 0 ? getpwnam("postgres") : NULL;
    if (o->pg_dir) {
        snprintf(e->pg.dir, sizeof(e->pg.dir), "%s", o->pg_dir);
        if (mkdir(e->pg.dir, 0700) != 0 && errno != EEXIST) {
            fprintf(stderr, "verdict-bench: %s: %s\n", e->pg.dir, strerror(errno));
            return false;
        }
    } else {
        snprintf(e->pg.dir, sizeof(e->pg.dir), "/tmp/verdict-bench-pg.XXXXXX");
        if (!mkdtemp(e->pg.dir)) {
            fprintf(stderr, "verdict-bench: mkdtemp: %s\n", strerror(errno));
            return false;
        }
        e->pg.made_dir = true;
    }
    if (geteuid() == 0 && (!pw || chown(e->pg.dir, pw->pw_uid, pw->pw_gid) != 0)) {
        fprintf(stderr, "verdict-bench: %s: cannot hand it to the postgres user\n", e->pg.dir);
        return false;
    }
    return true;
}

bool vb_pg_start(vb_env *e, const vb_options *o)
{
    char data[600], log[600], ilog[600], version[620], opts[1400], bin[2][300];
    int port;
    if (!prepare_dir(e, o))
        return false;
    snprintf(data, sizeof(data), "%s/data", e->pg.dir);
    snprintf(log, sizeof(log), "%s/postgres.log", e->pg.dir); /* pg_ctl makes it, as postgres */
    snprintf(ilog, sizeof(ilog), "%s/initdb.log", e->pg.dir);
    snprintf(version, sizeof(version), "%s/PG_VERSION", data);
    snprintf(bin[0], sizeof(bin[0]), "%s/initdb", VB_PG_BIN);
    snprintf(bin[1], sizeof(bin[1]), "%s/pg_ctl", VB_PG_BIN);
    if (access(version, F_OK) != 0) {
        char *const initdb[] = {
            bin[0],       (char *)"-D",    data,         (char *)"-U",   (char *)"postgres",
            (char *)"-A", (char *)"trust", (char *)"-E", (char *)"UTF8", (char *)"--locale=C.UTF-8",
            NULL};
        vb_log("initdb %s", data);
        if (run_cmd(initdb, ilog) != 0) {
            fprintf(stderr, "verdict-bench: initdb failed, see %s\n", ilog);
            return false;
        }
    }
    if ((port = vb_free_port()) <= 0)
        return false;
    snprintf(opts, sizeof(opts),
             "-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s %s%s %s", port,
             e->pg.dir, durable_opts, o->fast_db ? fast_opts : "", o->pg_opts ? o->pg_opts : "");
    char *const start[] = {bin[1],          (char *)"-D", data,         (char *)"-l", log,
                           (char *)"-w",    (char *)"-t", (char *)"60", (char *)"-o", opts,
                           (char *)"start", NULL};
    if (run_cmd(start, "/dev/null") != 0) {
        fprintf(stderr, "verdict-bench: pg_ctl start failed, see %s\n", log);
        return false;
    }
    e->pg.started = true;
    snprintf(e->pg.url, sizeof(e->pg.url), "host=127.0.0.1 port=%d user=postgres dbname=postgres",
             port);
    vb_log("PostgreSQL in %s on 127.0.0.1:%d (%s)", e->pg.dir, port,
           o->fast_db ? "--fast-db: fsync, synchronous_commit, full_page_writes off" : "durable");
    return true;
}

void vb_pg_stop(vb_env *e, bool keep)
{
    char data[600], bin[300];
    if (e->pg.started) {
        snprintf(data, sizeof(data), "%s/data", e->pg.dir);
        snprintf(bin, sizeof(bin), "%s/pg_ctl", VB_PG_BIN);
        char *const stop[] = {bin,          (char *)"-D",   data, (char *)"-m", (char *)"fast",
                              (char *)"-w", (char *)"stop", NULL};
        run_cmd(stop, "/dev/null");
        e->pg.started = false;
    }
    if (e->pg.made_dir && !keep) {
        char *const rm[] = {(char *)"rm", (char *)"-rf", e->pg.dir, NULL};
        pid_t pid = fork();
        if (pid == 0) {
            execvp(rm[0], rm);
            _exit(127);
        }
        if (pid > 0)
            waitpid(pid, NULL, 0);
        e->pg.made_dir = false;
    } else if (e->pg.made_dir) {
        vb_log("kept the cluster's directory %s", e->pg.dir);
    }
}

/* ---- what the server runs with, and its counters ------------------------------------------ */

static PGresult *query(PGconn *c, const char *sql, ExecStatusType want)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != want) {
        PQclear(r);
        return NULL;
    }
    return r;
}

void vb_pg_describe(vb_env *e)
{
    PGconn *c = PQconnectdb(e->db_url);
    PGresult *r = NULL;
    e->have_pgss = false;
    snprintf(e->settings, sizeof(e->settings), "unknown");
    if (PQstatus(c) != CONNECTION_OK)
        goto out;
    r = query(c,
              "SELECT format('fsync=%s synchronous_commit=%s full_page_writes=%s "
              "shared_buffers=%s max_wal_size=%s wal_level=%s checkpoint_timeout=%s "
              "wal_compression=%s',"
              " current_setting('fsync'), current_setting('synchronous_commit'),"
              " current_setting('full_page_writes'), current_setting('shared_buffers'),"
              " current_setting('max_wal_size'), current_setting('wal_level'),"
              " current_setting('checkpoint_timeout'), current_setting('wal_compression')),"
              " current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%'",
              PGRES_TUPLES_OK);
    if (!r || PQntuples(r) != 1)
        goto out;
    snprintf(e->settings, sizeof(e->settings), "%s", PQgetvalue(r, 0, 0));
    if (strcmp(PQgetvalue(r, 0, 1), "t") == 0) {
        PGresult *x =
            query(c, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements", PGRES_COMMAND_OK);
        e->have_pgss = x != NULL;
        PQclear(x);
    }
out:
    PQclear(r);
    PQfinish(c);
}

bool vb_dbstat_read(const vb_env *e, vb_dbstat *out)
{
    PGconn *c = PQconnectdb(e->db_url);
    PGresult *r = NULL;
    memset(out, 0, sizeof(*out));
    if (PQstatus(c) != CONNECTION_OK)
        goto out;
    r = query(c,
              "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0'), w.wal_records,"
              " w.wal_fpi, d.xact_commit, d.xact_rollback FROM pg_stat_wal w, pg_stat_database d"
              " WHERE d.datname = current_database()",
              PGRES_TUPLES_OK);
    if (!r || PQntuples(r) != 1)
        goto out;
    out->wal_lsn = strtod(PQgetvalue(r, 0, 0), NULL);
    out->wal_records = strtod(PQgetvalue(r, 0, 1), NULL);
    out->wal_fpi = strtod(PQgetvalue(r, 0, 2), NULL);
    out->xact_commit = strtod(PQgetvalue(r, 0, 3), NULL);
    out->xact_rollback = strtod(PQgetvalue(r, 0, 4), NULL);
    out->ok = true;
out:
    PQclear(r);
    PQfinish(c);
    return out->ok;
}

void vb_pgss_reset(const vb_env *e)
{
    if (e->have_pgss)
        vb_env_sql(e, "SELECT pg_stat_statements_reset()");
}

int vb_pgss_collect(const vb_env *e, vb_stmt *out, int max, double *top_wal)
{
    PGconn *c = NULL;
    PGresult *r = NULL;
    int n = 0;
    *top_wal = 0;
    if (!e->have_pgss)
        return 0;
    c = PQconnectdb(e->db_url);
    if (PQstatus(c) != CONNECTION_OK)
        goto out;
    /* this database's statements; nested ones (track=all: triggers, functions) are listed
     * too, but their WAL is also inside the top-level statement that ran them */
    r = query(c,
              "WITH s AS (SELECT * FROM pg_stat_statements WHERE dbid = (SELECT oid FROM"
              " pg_database WHERE datname = current_database()) AND calls > 0"
              " AND query NOT LIKE '%pg_stat_statements_reset%'"
              " AND query NOT LIKE '%pg_current_wal_insert_lsn%')"
              " SELECT toplevel, calls, mean_exec_time, wal_bytes, wal_records, wal_fpi, rows,"
              " left(regexp_replace(query, '\\s+', ' ', 'g'), 190),"
              " (SELECT coalesce(sum(wal_bytes), 0) FROM s WHERE toplevel)"
              " FROM s ORDER BY wal_bytes DESC, total_exec_time DESC LIMIT 10",
              PGRES_TUPLES_OK);
    for (int i = 0; r && i < PQntuples(r) && n < max; i++, n++) {
        vb_stmt *t = &out[n];
        t->toplevel = strcmp(PQgetvalue(r, i, 0), "t") == 0;
        t->calls = strtod(PQgetvalue(r, i, 1), NULL);
        t->mean_ms = strtod(PQgetvalue(r, i, 2), NULL);
        t->wal_bytes = strtod(PQgetvalue(r, i, 3), NULL);
        t->wal_records = strtod(PQgetvalue(r, i, 4), NULL);
        t->wal_fpi = strtod(PQgetvalue(r, i, 5), NULL);
        t->rows = strtod(PQgetvalue(r, i, 6), NULL);
        snprintf(t->query, sizeof(t->query), "%s", PQgetvalue(r, i, 7));
        *top_wal = strtod(PQgetvalue(r, i, 8), NULL);
    }
out:
    PQclear(r);
    PQfinish(c);
    return n;
}
