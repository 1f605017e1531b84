/* migrate.c - apply the embedded migrations of sql/ in order, each in its own transaction,
 * under a transaction-scoped advisory lock so that replicas starting together never race (and
 * so that it works through a transaction-pooling PgBouncer, where a session lock would stay
 * on whichever server connection took it), and record them in schema_migrations. Then the
 * function files of sql/functions/ that are not in place, all in one transaction under the
 * same lock: a file is applied when its MD5 is not the one recorded in schema_functions, or
 * when the function's definition in the database is no longer the one it left (a migration
 * applied later, out of number order, restated it; someone replaced it by hand). A function
 * changes in place in its file, and the files always win (CONTRIBUTING.md, SQL;
 * scripts/sql.sh keeps the files current). */
#include "store_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/embedded.h"
#include "verdict/util.h"

/* Any fixed bigint: the key of the "verdict migrations" advisory lock. */
#define MIGRATE_LOCK "SELECT pg_advisory_xact_lock(7306153949216651921)"

/* The leading number of "0007_name.sql"; 0 when there is none. */
static int version_of(const char *name)
{
    int v = 0;
    for (const char *p = name; *p >= '0' && *p <= '9' && v < 100000; p++)
        v = v * 10 + (*p - '0');
    return v;
}

int vd_store_latest_version(void)
{
    int latest = 0;
    for (size_t i = 0; i < vd_migration_count; i++) {
        int v = version_of(vd_migrations[i].name);
        latest = v > latest ? v : latest;
    }
    return latest;
}

static vd_error fail(char *err, size_t errlen, PGconn *pg, const char *what, const char *name)
{
    snprintf(err, errlen, "%s%s%s: %s", what, name ? " " : "", name ? name : "",
             pg ? PQerrorMessage(pg) : "out of memory");
    return VD_ERR_DATABASE_UNAVAILABLE;
}

static bool exec_ok(PGconn *pg, const char *sql)
{
    PGresult *res = PQexec(pg, sql);
    ExecStatusType st = PQresultStatus(res);
    PQclear(res);
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

/* Whether migration `version` is recorded: 1 yes, 0 no, -1 the query failed. Every
 * migration not recorded is applied, not only those above the newest recorded: branches merged
 * in another order than their numbers still get every migration. */
static int is_applied(PGconn *pg, int version)
{
    char vbuf[16];
    const char *params[1] = {vbuf};
    snprintf(vbuf, sizeof(vbuf), "%d", version);
    PGresult *res = PQexecParams(pg, "SELECT count(*) FROM schema_migrations WHERE version = $1", 1,
                                 NULL, params, NULL, NULL, 0);
    int v = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        v = version_of(PQgetvalue(res, 0, 0)) > 0;
    PQclear(res);
    return v;
}

/* BEGIN, then wait for the migrations lock (released by the COMMIT or ROLLBACK). */
static bool locked_begin(PGconn *pg)
{
    return exec_ok(pg, "BEGIN") && exec_ok(pg, MIGRATE_LOCK) &&
           exec_ok(pg, "SET LOCAL client_min_messages = warning");
}

/* One migration in its own transaction, recorded with it (*done: it was applied now). On
 * failure err gets PostgreSQL's message (read before the ROLLBACK, which clears it). */
static bool apply_one(PGconn *pg, const vd_embedded_file *m, int version, bool *done, char *err,
                      size_t errlen)
{
    char vbuf[16];
    const char *params[2] = {vbuf, m->name};
    PGresult *res = NULL;
    bool ok = false;
    snprintf(vbuf, sizeof(vbuf), "%d", version);
    *done = false;
    if (!locked_begin(pg))
        goto out;
    if (is_applied(pg, version) != 0) { /* another replica applied it meanwhile, or an error */
        ok = exec_ok(pg, "COMMIT");
        goto out;
    }
    if (!exec_ok(pg, m->data))
        goto out;
    res = PQexecParams(pg, "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", 2, NULL,
                       params, NULL, NULL, 0);
    ok = PQresultStatus(res) == PGRES_COMMAND_OK && exec_ok(pg, "COMMIT");
    *done = ok;
out:
    PQclear(res);
    if (!ok) {
        snprintf(err, errlen, "migration %s: %s", m->name, PQerrorMessage(pg));
        exec_ok(pg, "ROLLBACK");
    }
    return ok;
}

/* The MD5 of every visible overload of function $1 as the database defines it now. */
#define LIVE_MD5                                                                                   \
    "(SELECT md5(string_agg(pg_get_functiondef(p.oid), E'\\n'"                                     \
    "  ORDER BY pg_get_function_identity_arguments(p.oid)))"                                       \
    " FROM pg_proc p WHERE p.proname = $1::text AND pg_function_is_visible(p.oid))"

/* Whether function file f is in place (its MD5 recorded, and the definition it left still
 * there): 1 yes, 0 no, -1 the query failed. */
static int function_current(PGconn *pg, const vd_sql_function *f)
{
    const char *params[2] = {f->name, f->md5};
    PGresult *res = PQexecParams(pg,
                                 "SELECT count(*) FROM schema_functions"
                                 " WHERE name = $1 AND md5 = $2 AND live_md5 = " LIVE_MD5,
                                 2, NULL, params, NULL, NULL, 0);
    int v = -1;
    if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
        v = strcmp(PQgetvalue(res, 0, 0), "1") == 0;
    PQclear(res);
    return v;
}

static bool record_function(PGconn *pg, const vd_sql_function *f)
{
    const char *params[2] = {f->name, f->md5};
    PGresult *res = PQexecParams(pg,
                                 "INSERT INTO schema_functions (name, md5, live_md5)"
                                 " VALUES ($1, $2, " LIVE_MD5 ") ON CONFLICT (name) DO UPDATE"
                                 " SET md5 = EXCLUDED.md5, live_md5 = EXCLUDED.live_md5,"
                                 " applied_at = now()",
                                 2, NULL, params, NULL, NULL, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok;
}

/* Forget the rows of files that are gone, so that a file that comes back is applied again.
 * The names are file names ([a-z0-9_]), so a text[] literal holds them as they are. */
static bool forget_gone_functions(PGconn *pg)
{
    size_t cap = 3;
    for (size_t i = 0; i < vd_sql_function_count; i++)
        cap += strlen(vd_sql_functions[i].name) + 1;
    char *names = malloc(cap);
    if (!names)
        return false;
    size_t n = 0;
    names[n++] = '{';
    for (size_t i = 0; i < vd_sql_function_count; i++) {
        size_t len = strlen(vd_sql_functions[i].name);
        if (i > 0)
            names[n++] = ',';
        memcpy(names + n, vd_sql_functions[i].name, len);
        n += len;
    }
    names[n++] = '}';
    names[n] = '\0';
    const char *params[1] = {names};
    PGresult *res = PQexecParams(pg, "DELETE FROM schema_functions WHERE name <> ALL ($1::text[])",
                                 1, NULL, params, NULL, NULL, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    free(names);
    return ok;
}

/* The function files not in place, after the migrations, in one transaction. */
static vd_error apply_functions(PGconn *pg, char *err, size_t errlen)
{
    const char *what = "create schema_functions", *name = NULL;
    if (!locked_begin(pg) ||
        !exec_ok(pg, "CREATE TABLE IF NOT EXISTS schema_functions ("
                     " name text PRIMARY KEY, md5 text NOT NULL, live_md5 text,"
                     " applied_at timestamptz NOT NULL DEFAULT now())"))
        goto failed;
    for (size_t i = 0; i < vd_sql_function_count; i++) {
        const vd_sql_function *f = &vd_sql_functions[i];
        int current = function_current(pg, f);
        what = "function";
        name = f->name;
        if (current < 0 || (current == 0 && !(exec_ok(pg, f->data) && record_function(pg, f))))
            goto failed;
        if (current == 0)
            vd_logf(VD_LOG_INFO, "applied function %s", f->name);
    }
    what = "record functions";
    name = NULL;
    if (!forget_gone_functions(pg) || !exec_ok(pg, "COMMIT"))
        goto failed;
    return VD_OK;
failed:;
    vd_error rc = fail(err, errlen, pg, what, name);
    exec_ok(pg, "ROLLBACK");
    return rc;
}

static vd_error migrate_locked(PGconn *pg, int *applied, char *err, size_t errlen)
{
    if (!locked_begin(pg) ||
        !exec_ok(pg, "CREATE TABLE IF NOT EXISTS schema_migrations ("
                     " version integer PRIMARY KEY, name text NOT NULL,"
                     " applied_at timestamptz NOT NULL DEFAULT now())") ||
        !exec_ok(pg, "COMMIT")) {
        vd_error rc = fail(err, errlen, pg, "create schema_migrations", NULL);
        exec_ok(pg, "ROLLBACK");
        return rc;
    }
    for (size_t i = 0; i < vd_migration_count; i++) {
        const vd_embedded_file *m = &vd_migrations[i];
        int v = version_of(m->name);
        bool done = false;
        int have = is_applied(pg, v);
        if (have < 0)
            return fail(err, errlen, pg, "read schema_migrations", NULL);
        if (have)
            continue;
        if (!apply_one(pg, m, v, &done, err, errlen))
            return VD_ERR_DATABASE_UNAVAILABLE;
        if (!done)
            continue;
        vd_logf(VD_LOG_INFO, "applied migration %s", m->name);
        if (applied)
            (*applied)++;
    }
    return apply_functions(pg, err, errlen);
}

vd_error vd_store_migrate(const char *url, int *applied, char *err, size_t errlen)
{
    const char *keys[] = {"dbname", "connect_timeout", "application_name", NULL};
    const char *vals[] = {url, "10", "verdictd-migrate", NULL};
    PGconn *pg = PQconnectdbParams(keys, vals, 1);
    vd_error rc = VD_OK;
    if (applied)
        *applied = 0;
    if (!pg || PQstatus(pg) != CONNECTION_OK) {
        rc = fail(err, errlen, pg, "connect", NULL);
        goto out;
    }
    rc = migrate_locked(pg, applied, err, errlen);
out:
    PQfinish(pg);
    return rc;
}

vd_error vd_store_ready(vd_conn *conn, int *version)
{
    PGresult *res = NULL;
    vd_error rc = vd_sql_exec(conn, VD_SQL_SCHEMA_VERSION, 0, NULL, &res);
    if (rc)
        return rc;
    *version = version_of(PQgetvalue(res, 0, 0));
    PQclear(res);
    return *version >= vd_store_latest_version() ? VD_OK : VD_ERR_DATABASE_UNAVAILABLE;
}
