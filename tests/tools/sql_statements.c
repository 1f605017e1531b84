/* sql_statements.c - writes every statement of src/store/statements.c to DIR/<name>.sql for
 * scripts/sql.sh: a header naming the source and the parameters (their types as PostgreSQL
 * infers them when the statement is prepared against the database at URL, a migrated one),
 * then the text byte for byte and one newline. Not installed; built with the tests.
 *
 * usage: sql_statements DIR URL */
#include <libpq-fe.h>
#include <stdio.h>
#include <string.h>

#include "store_internal.h"

/* The header's parameter lines: "-- $n type" for each, in order. */
static int write_params(PGconn *pg, const vd_sql_statement *s, FILE *out)
{
    const char *params[1] = {s->name};
    PGresult *res = PQprepare(pg, s->name, s->text, 0, NULL);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    if (!ok)
        fprintf(stderr, "sql_statements: prepare %s: %s", s->name, PQerrorMessage(pg));
    PQclear(res);
    if (!ok)
        return -1;
    res = PQexecParams(pg,
                       "SELECT u.n, u.t::text FROM pg_prepared_statements p,"
                       " unnest(p.parameter_types) WITH ORDINALITY AS u (t, n)"
                       " WHERE p.name = $1 ORDER BY u.n",
                       1, NULL, params, NULL, NULL, 0);
    ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    for (int i = 0; ok && i < PQntuples(res); i++)
        fprintf(out, "-- $%s %s\n", PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
    if (ok && PQntuples(res) == 0)
        fprintf(out, "-- (no parameters)\n");
    PQclear(res);
    return ok ? 0 : -1;
}

static int write_one(PGconn *pg, const char *dir, const vd_sql_statement *s)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s.sql", dir, s->name);
    FILE *out = fopen(path, "w");
    if (!out) {
        perror(path);
        return -1;
    }
    fprintf(out,
            "-- %s: generated from src/store/statements.c by scripts/sql.sh gen; do not edit.\n"
            "-- The text below is byte for byte what verdictd prepares, then one newline.\n"
            "-- Parameters:\n",
            s->name);
    int rc = write_params(pg, s, out);
    fprintf(out, "%s\n", s->text);
    if (fclose(out) != 0)
        rc = -1;
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sql_statements DIR URL\n");
        return 2;
    }
    PGconn *pg = PQconnectdb(argv[2]);
    int rc = 0;
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "sql_statements: %s", PQerrorMessage(pg));
        rc = 1;
    }
    for (int i = 0; rc == 0 && i < VD_SQL__MAX; i++) {
        if (write_one(pg, argv[1], &vd_sql_statements[i]) != 0)
            rc = 1;
    }
    PQfinish(pg);
    return rc;
}
