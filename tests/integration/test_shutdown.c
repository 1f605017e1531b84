/* test_shutdown.c - a stop under load drains: 100 keep-alive clients claim and complete items
 * through one verdictd, which gets SIGTERM in the middle of it, 20 times over. Each time the
 * process exits 0 (under ASan: no crash, no leak), every request is answered 2xx, or refused
 * with the 503 shutting_down envelope and Connection: close, or its connection is closed before
 * one byte of an answer arrived; every disposition answered 200 is in the database, and none
 * refused was applied. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "verdict/util.h"
#include "vt.h"

#define CLIENTS 100
#define ROUNDS 20
#define ITEMS_PER_ROUND 1000
#define MAX_ACKED 20000

typedef struct round_state {
    vt_server srv;
    char flow[32];
    atomic_bool stop;
    _Atomic long ok, refused, closed, bad, acked_n, refused_n;
    int64_t acked[MAX_ACKED];     /* jobs whose completion was answered 200 */
    int64_t refused_j[MAX_ACKED]; /* jobs whose completion was refused */
    char first_bad[400];
    pthread_mutex_t mu;
} round_state;

typedef struct answer {
    CURLcode rc;
    long status;
    size_t header_bytes;
    bool conn_close;
    char body[2048];
    size_t body_len;
} answer;

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    answer *a = ud;
    a->header_bytes += size * n;
    if (size * n >= 17 && strncasecmp(p, "Connection: close", 17) == 0)
        a->conn_close = true;
    return size * n;
}

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    answer *a = ud;
    size_t k = size * n;
    if (a->body_len + k < sizeof(a->body)) {
        memcpy(a->body + a->body_len, p, k);
        a->body_len += k;
        a->body[a->body_len] = '\0';
    }
    return size * n;
}

/* One POST on the thread's kept-alive handle. */
static answer post(CURL *c, const round_state *rs, const char *path, const char *body)
{
    answer a;
    char url[256];
    struct curl_slist *h = NULL;
    memset(&a, 0, sizeof(a));
    snprintf(url, sizeof(url), "%s%s", rs->srv.base, path);
    h = curl_slist_append(h, "Authorization: Bearer " VT_WORKER);
    h = curl_slist_append(h, "Content-Type: application/json");
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &a);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    a.rc = curl_easy_perform(c);
    if (a.rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a.status);
    curl_slist_free_all(h);
    return a;
}

static void note_bad(round_state *rs, const answer *a, const char *path)
{
    atomic_fetch_add(&rs->bad, 1);
    pthread_mutex_lock(&rs->mu);
    if (!rs->first_bad[0])
        snprintf(rs->first_bad, sizeof(rs->first_bad),
                 "%s: curl %d, status %ld, %zu header bytes: %.200s", path, (int)a->rc, a->status,
                 a->header_bytes, a->body);
    pthread_mutex_unlock(&rs->mu);
}

/* Classify an answer: 0 answered 2xx, 1 refused cleanly (the caller stops), -1 anything else. */
static int classify(round_state *rs, const answer *a, const char *path)
{
    if (a->rc == CURLE_OK && a->status >= 200 && a->status < 300) {
        atomic_fetch_add(&rs->ok, 1);
        return 0;
    }
    if (a->rc == CURLE_OK && a->status == 503 && a->conn_close &&
        strstr(a->body, "\"error\":\"shutting_down\"")) {
        atomic_fetch_add(&rs->refused, 1);
        return 1;
    }
    if (a->rc != CURLE_OK && a->header_bytes == 0 && a->body_len == 0) {
        atomic_fetch_add(&rs->closed, 1);
        return 1;
    }
    note_bad(rs, a, path);
    return -1;
}

static void record(_Atomic long *n, int64_t *list, int64_t job)
{
    long i = atomic_fetch_add(n, 1);
    if (i < MAX_ACKED)
        list[i] = job;
}

/* Claim one item and complete it; false when the client is done. */
static bool one_cycle(round_state *rs, CURL *c, int index)
{
    char body[512], path[64];
    snprintf(body, sizeof(body),
             "{\"flow_step_id\": \"%s\", \"worker_id\": \"w%d\", \"limit\": 1,"
             " \"lease_seconds\": 600}",
             rs->flow, index);
    answer a = post(c, rs, "/v1/claims", body);
    if (classify(rs, &a, "/v1/claims") != 0)
        return false;
    cJSON *j = cJSON_Parse(a.body);
    const cJSON *cl = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "claims"), 0);
    if (!cl) {
        cJSON_Delete(j);
        return false; /* nothing left to claim */
    }
    int64_t job = (int64_t)vt_num(cl, "job_id");
    snprintf(path, sizeof(path), "/v1/jobs/%lld/disposition", (long long)job);
    snprintf(body, sizeof(body), "{\"claim_token\": \"%s\", \"disposition\": \"complete\"}",
             vt_str(cl, "claim_token"));
    cJSON_Delete(j);
    answer d = post(c, rs, path, body);
    int k = classify(rs, &d, path);
    if (k == 0)
        record(&rs->acked_n, rs->acked, job);
    else if (k == 1)
        record(&rs->refused_n, rs->refused_j, job);
    return k == 0;
}

typedef struct client_arg {
    round_state *rs;
    int index;
} client_arg;

static void *client(void *p)
{
    client_arg *ca = p;
    CURL *c = curl_easy_init();
    while (!atomic_load(&ca->rs->stop) && one_cycle(ca->rs, c, ca->index))
        ;
    curl_easy_cleanup(c);
    return NULL;
}

/* SIGTERM, then wait up to 60 s for the exit; returns the wait status (-1: it did not exit). */
static int terminate(vt_server *s)
{
    int status = 0;
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 6000; i++) {
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            return status;
        }
        vt_sleep_ms(10);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &status, 0);
    s->pid = 0;
    return -1;
}

static void show_log(const vt_server *s)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "tail -n 40 %s >&2", s->log_path);
    if (system(cmd) != 0)
        fprintf(stderr, "(no log)\n");
}

/* "id1,id2,..." of list[0..n) into a malloc'd string ("0" when empty: no job has id 0). */
static char *id_list(const int64_t *list, long n)
{
    size_t cap = 24 * (size_t)(n + 1), len = 0;
    char *out = malloc(cap);
    assert_non_null(out);
    len += (size_t)snprintf(out, cap, "0");
    for (long i = 0; i < n && i < MAX_ACKED; i++)
        len += (size_t)snprintf(out + len, cap - len, ",%lld", (long long)list[i]);
    return out;
}

/* Every completion answered 200 is completed in the database; none refused is. */
static void check_database(round_state *rs)
{
    long acked = atomic_load(&rs->acked_n), refused = atomic_load(&rs->refused_n);
    char *ids = id_list(rs->acked, acked);
    long done =
        vt_sql_long("SELECT count(*) FROM jobs WHERE status = 'completed' AND id IN (%s)", ids);
    free(ids);
    if (done != acked)
        fail_msg("%ld completions were answered 200, %ld are in the database", acked, done);
    ids = id_list(rs->refused_j, refused);
    done = vt_sql_long("SELECT count(*) FROM jobs WHERE status = 'completed' AND id IN (%s)", ids);
    free(ids);
    if (done != 0)
        fail_msg("%ld of %ld refused completions were applied", done, refused);
}

static void run_round(round_state *rs, int round)
{
    static const char *env[] = {"VERDICT_QUEUE_DEPTH=512", "VERDICT_LOG_LEVEL=warn", NULL};
    pthread_t t[CLIENTS];
    client_arg args[CLIENTS];
    snprintf(rs->flow, sizeof(rs->flow), "stop%d", round);
    vt_server_start(&rs->srv, env); /* migrates the fresh database in the first round */
    vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('%s')", rs->flow);
    vt_seed_items(rs->flow, "s-", ITEMS_PER_ROUND, 5, 3);
    for (int i = 0; i < CLIENTS; i++) {
        args[i] = (client_arg){rs, i};
        assert_int_equal(pthread_create(&t[i], NULL, client, &args[i]), 0);
    }
    /* in full flow: some completions acknowledged, many requests on the wire */
    for (int i = 0; i < 300 && atomic_load(&rs->acked_n) < CLIENTS / 2; i++)
        vt_sleep_ms(10);
    vt_server srv = rs->srv;
    int status = terminate(&rs->srv);
    atomic_store(&rs->stop, true);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "round %d: %ld answered, %ld refused 503, %ld closed, %ld other, %ld acked\n",
            round, atomic_load(&rs->ok), atomic_load(&rs->refused), atomic_load(&rs->closed),
            atomic_load(&rs->bad), atomic_load(&rs->acked_n));
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        show_log(&srv);
        fail_msg("round %d: verdictd ended with wait status %d", round, status);
    }
    unlink(srv.log_path);
    if (atomic_load(&rs->bad) > 0)
        fail_msg("round %d: %s", round, rs->first_bad);
    assert_true(atomic_load(&rs->acked_n) > 0);
    check_database(rs);
}

static void test_shutdown_under_load(void **state)
{
    static round_state rs;
    (void)state;
    for (int round = 1; round <= ROUNDS; round++) {
        memset(&rs, 0, sizeof(rs));
        pthread_mutex_init(&rs.mu, NULL);
        run_round(&rs, round);
        pthread_mutex_destroy(&rs.mu);
    }
}

/* The database only: each round starts and stops its own verdictd. */
VT_FIXTURE(.srv = {NULL})

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shutdown_under_load),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
