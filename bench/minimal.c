/* minimal.c - the minimal SQL cycle verdict is compared with: one table (queue, id, state,
 * payload, worker, two timestamps) whose primary key is (queue, id), one partial index on the
 * claimable rows, a claim that is one UPDATE of the first `limit` available rows of a queue
 * taken with FOR UPDATE SKIP LOCKED and returning their payloads, and a completion that is one
 * UPDATE of those rows that must find every one running; each statement its own (autocommit)
 * transaction. No audit, no budgets, no fencing token: the floor a queue on PostgreSQL pays.
 */
#include "bench.h"

#include <inttypes.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vb_min {
    PGconn *c;
    char queue[64]; /* the queue of the last claim: its completion names it (primary key) */
    char error[160];
};

static const char min_schema[] =
    "SET client_min_messages = warning;"
    "CREATE TABLE IF NOT EXISTS bench_min_jobs ("
    " id bigserial,"
    " queue text NOT NULL,"
    " state text NOT NULL DEFAULT 'available',"
    " payload jsonb NOT NULL,"
    " worker text,"
    " claimed_at timestamptz,"
    " finished_at timestamptz,"
    " PRIMARY KEY (queue, id));"
    "CREATE INDEX IF NOT EXISTS bench_min_claimable ON bench_min_jobs (queue, id)"
    " WHERE state = 'available'";

/* %d: the limit (1 or VB_MAX_BATCH), a literal so that every plan knows it. The primary key
 * is (queue, id), not (id): with a primary key on id alone, a claim of one is planned as a
 * walk of the primary key in id order filtered on queue and state (the planner prices the
 * first match as if the queue's available rows were spread evenly over the ids), which reads
 * every done row and every row of the queues inserted before this one: 75,578 rows and
 * 3,644 buffers, 20-30 ms, for the last of four queues of 25,000 jobs. With (queue, id) the
 * only index that hands out a queue's rows in id order besides the primary key is the
 * partial index, which holds the same order with fewer rows, so it is always the cheaper
 * plan (0.2 ms, 5 buffers). */
static const char min_claim[] =
    "UPDATE bench_min_jobs SET state = 'running', worker = $2, claimed_at = now()"
    " WHERE queue = $1 AND id = ANY (ARRAY(SELECT id FROM bench_min_jobs WHERE queue = $1"
    " AND state = 'available' ORDER BY id LIMIT %d FOR UPDATE SKIP LOCKED))"
    " RETURNING id, payload";

static const char min_complete[] = "UPDATE bench_min_jobs SET state = 'done', finished_at = now()"
                                   " WHERE queue = $1 AND id = ANY ($2::bigint[])"
                                   " AND state = 'running'";

bool vb_min_refill(vb_env *e, const vb_options *o, long per_step)
{
    if (!vb_env_sql(e, min_schema))
        return false;
    for (int k = 0; k < o->flow_steps; k++) {
        char sql[512];
        long have;
        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM bench_min_jobs WHERE queue = 'bench_%d' AND state = "
                 "'available'",
                 k);
        if ((have = vb_env_sql_long(e, sql)) < 0)
            return false;
        if (have >= per_step)
            continue;
        snprintf(sql, sizeof(sql),
                 "INSERT INTO bench_min_jobs (queue, payload) SELECT 'bench_%d',"
                 " jsonb_build_object('title', 'bench item ' || g) FROM generate_series(1, %ld) g",
                 k, per_step - have);
        if (!vb_env_sql(e, sql))
            return false;
    }
    return true;
}

vb_min *vb_min_connect(const vb_env *e)
{
    vb_min *m = calloc(1, sizeof(*m));
    PGresult *r = NULL;
    bool ok = false;
    if (!m)
        return NULL;
    m->c = PQconnectdb(e->db_url);
    if (PQstatus(m->c) != CONNECTION_OK)
        goto out;
    ok = true;
    for (int i = 0; i < 2 && ok; i++) {
        char sql[sizeof(min_claim) + 16], name[32];
        int limit = i ? VB_MAX_BATCH : 1;
        snprintf(sql, sizeof(sql), min_claim, limit);
        snprintf(name, sizeof(name), "min_claim%d", limit);
        r = PQprepare(m->c, name, sql, 2, NULL);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
    }
    r = ok ? PQprepare(m->c, "min_complete", min_complete, 2, NULL) : NULL;
    ok = ok && PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
out:
    if (!ok) {
        vb_min_close(m);
        return NULL;
    }
    return m;
}

void vb_min_close(vb_min *m)
{
    if (!m)
        return;
    PQfinish(m->c);
    free(m);
}

const char *vb_min_error(vb_min *m)
{
    return m && m->error[0] ? m->error : "minimal: no error text";
}

static void note(vb_min *m, PGresult *r)
{
    snprintf(m->error, sizeof(m->error), "%s", r ? PQresultErrorMessage(r) : PQerrorMessage(m->c));
    m->error[strcspn(m->error, "\n")] = '\0';
}

int vb_min_claim(vb_min *m, const char *queue, const char *worker, int limit, int64_t *ids, int *n)
{
    const char *params[2] = {queue, worker};
    PGresult *r;
    *n = 0;
    r = PQexecPrepared(m->c, limit > 1 ? "min_claim10" : "min_claim1", 2, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        note(m, r);
        PQclear(r);
        return 500;
    }
    snprintf(m->queue, sizeof(m->queue), "%s", queue);
    /* the payload (column 1) travels to the client, as a worker's would; the bench drops it */
    for (int i = 0; i < PQntuples(r) && *n < limit; i++)
        ids[(*n)++] = strtoll(PQgetvalue(r, i, 0), NULL, 10);
    PQclear(r);
    return 200;
}

int vb_min_complete(vb_min *m, const int64_t *ids, int n)
{
    char arr[VB_MAX_BATCH * 24 + 4];
    size_t len = 0;
    const char *params[2] = {m->queue, arr};
    PGresult *r;
    int status;
    arr[len++] = '{';
    for (int i = 0; i < n && len < sizeof(arr) - 24; i++)
        len += (size_t)snprintf(arr + len, sizeof(arr) - len, "%s%" PRId64, i ? "," : "", ids[i]);
    snprintf(arr + len, sizeof(arr) - len, "}");
    r = PQexecPrepared(m->c, "min_complete", 2, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        note(m, r);
        status = 500;
    } else {
        status = strtol(PQcmdTuples(r), NULL, 10) == n ? 200 : 409;
        if (status != 200)
            snprintf(m->error, sizeof(m->error), "completed %s of %d", PQcmdTuples(r), n);
    }
    PQclear(r);
    return status;
}

/* After the run: every job a minimal cell claimed must have been completed exactly once. A
 * completion counts only rows it moved from running to done (a second one of the same job
 * answers 409), so no job was processed twice when every cell had no errors, and none was lost
 * when no row is left running. Logs the counts; false when a job is left running. */
bool vb_min_audit(const vb_env *e)
{
    long running =
        vb_env_sql_long(e, "SELECT count(*) FROM bench_min_jobs WHERE state = 'running'");
    long done = vb_env_sql_long(e, "SELECT count(*) FROM bench_min_jobs WHERE state = 'done'");
    if (running < 0 || done < 0)
        return false;
    vb_log("minimal: %ld jobs done (measured windows and warm-ups), %ld left running%s", done,
           running, running ? ": LOST JOBS" : "");
    return running == 0;
}
