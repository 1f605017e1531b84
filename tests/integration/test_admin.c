/* test_admin.c - the admin decisions and what the console reads: resolving a parked item (one,
 * and in bulk with a dry run that changes nothing), a bulk requeue's dry run, the change feed
 * (keyset order, the flow-step filter, and that it never passes over a smaller id still being
 * committed), the list filters and newest-first order, GET /v1/whoami, and the console's files
 * with their headers. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "vt.h"
#include "vt_api.h"

static vt_server srv;

/* An item of flow parked in manual_review (deferred with manual_review: true). */
static int64_t parked_review(const char *flow, const char *ident)
{
    vt_register(&srv, flow, ident, NULL);
    vt_claim c = vt_claim1(&srv, flow);
    vt_resp r = vt_dispose(&srv, &c,
                           "\"disposition\": \"defer_item\", \"reason_code\": \"quality_gate\","
                           " \"manual_review\": true");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, c.item_id), "manual_review");
    return c.item_id;
}

/* An item of flow that failed for good (budget of one attempt). */
static int64_t parked_failed(const char *flow, const char *ident)
{
    vt_register(&srv, flow, ident, "\"max_attempts\": 1");
    vt_claim c = vt_claim1(&srv, flow);
    vt_resp r = vt_dispose(&srv, &c, "\"disposition\": \"fail\", \"error\": \"boom\"");
    assert_int_equal(r.status, 200);
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, c.item_id), "failed");
    return c.item_id;
}

static vt_resp post(const char *path, const char *token, const char *body)
{
    return vt_http(&srv, "POST", path, token, body, NULL);
}

static void test_resolve_one(void **state)
{
    (void)state;
    char path[96];
    int64_t id = parked_review("res_one", "a");
    long before = vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld", (long long)id);
    snprintf(path, sizeof(path), "/v1/items/%lld/resolve", (long long)id);
    vt_resp r = post(path, VT_WORKER, "{\"outcome\": \"rejected\", \"reason\": \"junk\"}");
    vt_assert_error(&r, 403, "forbidden");
    vt_resp_free(&r);
    r = post(path, VT_ADMIN, "{\"outcome\": \"rejected\"}");
    vt_assert_error(&r, 400, "missing_field");
    assert_string_equal(vt_str(r.json, "field"), "reason");
    vt_resp_free(&r);
    r = post(path, VT_ADMIN, "{\"outcome\": \"available\", \"reason\": \"x\"}");
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "outcome");
    vt_resp_free(&r);
    r = post(path, VT_ADMIN,
             "{\"outcome\": \"rejected\", \"reason\": \"junk source\","
             " \"reason_code\": \"spam\"}");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "item.state"), "rejected");
    assert_string_equal(vt_str(r.json, "item.last_reason_code"), "spam");
    assert_string_equal(vt_str(r.json, "item.last_reason"), "junk source");
    assert_string_equal(vt_str(r.json, "transition.cause"), "resolve");
    assert_string_equal(vt_str(r.json, "transition.from_state"), "manual_review");
    assert_string_equal(vt_str(r.json, "transition.to_state"), "rejected");
    assert_string_equal(vt_str(r.json, "transition.actor"), "ops");
    assert_string_equal(vt_str(r.json, "transition.reason"), "junk source");
    long tid = (long)vt_num(r.json, "transition.id");
    vt_resp_free(&r);
    /* stored: exactly one more transition, the one answered, and the item's state */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE item_id = %lld", (long long)id),
                     before + 1);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE id = %ld AND cause ="
                                 " 'resolve' AND actor = 'ops' AND to_state = 'rejected'",
                                 tid),
                     1);
    /* rejected now: not parked any more */
    r = post(path, VT_ADMIN, "{\"outcome\": \"processed\", \"reason\": \"again\"}");
    vt_assert_error(&r, 409, "invalid_transition");
    vt_resp_free(&r);
    /* a failed item can be processed by hand; the default reason code is 'resolve' */
    int64_t f = parked_failed("res_one", "b");
    snprintf(path, sizeof(path), "/v1/items/%lld/resolve", (long long)f);
    r = post(path, VT_ADMIN, "{\"outcome\": \"processed\", \"reason\": \"published by hand\"}");
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "item.state"), "processed");
    assert_string_equal(vt_str(r.json, "transition.reason_code"), "resolve");
    assert_string_equal(vt_str(r.json, "transition.from_state"), "failed");
    vt_resp_free(&r);
    /* available and claimed items are not parked; an unknown one is 404 */
    int64_t avail = vt_register(&srv, "res_one", "c", NULL);
    snprintf(path, sizeof(path), "/v1/items/%lld/resolve", (long long)avail);
    r = post(path, VT_ADMIN, "{\"outcome\": \"processed\", \"reason\": \"x\"}");
    vt_assert_error(&r, 409, "invalid_transition");
    vt_resp_free(&r);
    vt_claim c = vt_claim1(&srv, "res_one");
    snprintf(path, sizeof(path), "/v1/items/%lld/resolve", (long long)c.item_id);
    r = post(path, VT_ADMIN, "{\"outcome\": \"processed\", \"reason\": \"x\"}");
    vt_assert_error(&r, 409, "invalid_transition");
    vt_resp_free(&r);
    assert_string_equal(vt_item_state(&srv, c.item_id), "claimed");
    r = post("/v1/items/999999999/resolve", VT_ADMIN,
             "{\"outcome\": \"processed\", \"reason\": \"x\"}");
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
}

static void test_resolve_bulk_dry_run(void **state)
{
    (void)state;
    int64_t ids[4];
    for (int i = 0; i < 4; i++) {
        char ident[16];
        snprintf(ident, sizeof(ident), "r%d", i);
        ids[i] = parked_review("res_bulk", ident);
    }
    parked_failed("res_bulk", "f0");
    long trans = vt_sql_long("SELECT count(*) FROM audit");
    const char *sel = "{\"flow_step_id\": \"res_bulk\", \"state\": \"manual_review\","
                      " \"outcome\": \"rejected\", \"reason\": \"junk\", \"limit\": 3";
    char body[512];
    snprintf(body, sizeof(body), "%s, \"dry_run\": true}", sel);
    vt_resp r = post("/v1/items/resolve", VT_ADMIN, body);
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "would_resolve"), 3);
    const cJSON *list = cJSON_GetObjectItem(r.json, "item_ids");
    assert_int_equal(cJSON_GetArraySize(list), 3);
    for (int i = 0; i < 3; i++)
        assert_int_equal((int64_t)cJSON_GetArrayItem(list, i)->valuedouble, ids[i]);
    vt_resp_free(&r);
    /* nothing changed */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit"), trans);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'res_bulk'"
                                 " AND state = 'manual_review'"),
                     4);
    /* the real call takes exactly what the dry run named */
    snprintf(body, sizeof(body), "%s, \"set_reason_code\": \"spam\"}", sel);
    r = post("/v1/items/resolve", VT_ADMIN, body);
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "resolved"), 3);
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE id IN (%lld, %lld, %lld) AND"
                                 " state = 'rejected' AND last_reason_code = 'spam'",
                                 (long long)ids[0], (long long)ids[1], (long long)ids[2]),
                     3);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit WHERE cause = 'resolve' AND"
                                 " item_id IN (%lld, %lld, %lld)",
                                 (long long)ids[0], (long long)ids[1], (long long)ids[2]),
                     3);
    assert_string_equal(vt_item_state(&srv, ids[3]), "manual_review");
    /* the failed one is untouched; states outside the parked two are refused */
    assert_int_equal(vt_sql_long("SELECT count(*) FROM items WHERE flow_step_id = 'res_bulk'"
                                 " AND state = 'failed'"),
                     1);
    r = post("/v1/items/resolve", VT_ADMIN,
             "{\"flow_step_id\": \"res_bulk\", \"state\":"
             " \"rejected\", \"outcome\": \"processed\", \"reason\": \"x\"}");
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "state");
    vt_resp_free(&r);
    /* filter by reason code: the failed item's is engine_error */
    r = post("/v1/items/resolve", VT_ADMIN,
             "{\"flow_step_id\": \"res_bulk\", \"state\":"
             " \"failed\", \"reason_code\": \"quality_gate\", \"outcome\": \"processed\","
             " \"reason\": \"x\", \"dry_run\": true}");
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "would_resolve"), 0);
    vt_resp_free(&r);
}

static void test_requeue_bulk_dry_run(void **state)
{
    (void)state;
    parked_failed("rq_dry", "a");
    parked_failed("rq_dry", "b");
    long trans = vt_sql_long("SELECT count(*) FROM audit");
    vt_resp r = post("/v1/items/requeue", VT_ADMIN,
                     "{\"flow_step_id\": \"rq_dry\", \"state\": \"failed\", \"dry_run\": true}");
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "would_requeue"), 2);
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(r.json, "dry_run")));
    vt_resp_free(&r);
    assert_int_equal(vt_sql_long("SELECT count(*) FROM audit"), trans);
    r = post("/v1/items/requeue", VT_ADMIN,
             "{\"flow_step_id\": \"rq_dry\", \"state\": \"failed\"}");
    assert_int_equal(r.status, 200);
    assert_int_equal((long)vt_num(r.json, "requeued"), 2);
    vt_resp_free(&r);
}

/* Page through the feed from `after` (optionally one flow step) with small pages until it
 * says caught_up; the ids seen, in order, are written to ids (at most cap); returns how many.
 * A full page's next_after is its last id; a short one's is at or past it (the scan's window). */
static int read_feed(int64_t after, const char *flow, int64_t *ids, int cap)
{
    int n = 0;
    for (int pages = 0; pages < 1000; pages++) {
        char path[160];
        snprintf(path, sizeof(path), "/v1/transitions?after=%lld&limit=7%s%s", (long long)after,
                 flow ? "&flow_step_id=" : "", flow ? flow : "");
        vt_resp r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
        assert_int_equal(r.status, 200);
        const cJSON *list = cJSON_GetObjectItem(r.json, "transitions");
        int got = cJSON_GetArraySize(list);
        for (const cJSON *t = list ? list->child : NULL; t; t = t->next) {
            assert_true(n < cap);
            ids[n++] = (int64_t)vt_num(t, "id");
            if (flow)
                assert_string_equal(vt_str(t, "flow_step_id"), flow);
        }
        int64_t next = (int64_t)vt_num(r.json, "next_after");
        bool caught_up = cJSON_IsTrue(cJSON_GetObjectItem(r.json, "caught_up"));
        assert_true(got == 7 ? next == ids[n - 1] && !caught_up
                             : next >= (got ? ids[n - 1] : after));
        after = next;
        vt_resp_free(&r);
        if (caught_up)
            return n;
    }
    fail_msg("the feed did not end");
    return n;
}

static void test_feed_keyset(void **state)
{
    (void)state;
    static int64_t ids[4096];
    parked_review("feed_a", "x");
    parked_failed("feed_b", "y");
    int n = read_feed(0, NULL, ids, 4096);
    assert_int_equal(n, vt_sql_long("SELECT count(*) FROM audit"));
    for (int i = 1; i < n; i++)
        assert_true(ids[i] > ids[i - 1]);
    assert_int_equal(ids[n - 1], vt_sql_long("SELECT max(id) FROM audit"));
    int m = read_feed(0, "feed_a", ids, 4096);
    assert_int_equal(m, vt_sql_long("SELECT count(*) FROM audit t JOIN items i ON"
                                    " i.id = t.item_id WHERE i.flow_step_id = 'feed_a'"));
    assert_int_equal(m, 3); /* register, claim, defer to manual_review */
    vt_resp r = vt_http(&srv, "GET", "/v1/transitions?limit=1001", VT_READER, NULL, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    vt_resp_free(&r);
}

/* A transaction that took id N and commits after another one committed N+1: the feed must
 * stop before N+1 until N is visible, or a poller would pass N for ever. */
static void test_feed_waits_for_open_writer(void **state)
{
    (void)state;
    static int64_t ids[4096];
    int64_t item = vt_register(&srv, "feed_open", "a", NULL);
    int64_t start = vt_sql_long("SELECT max(id) FROM audit");
    PGconn *c = PQconnectdb(vt_db_setup_url());
    assert_int_equal(PQstatus(c), CONNECTION_OK);
    PQclear(vt_pq_ok(c, "BEGIN"));
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO transitions (item_id, to_state, cause, actor)"
             " VALUES (%lld, 'available', 'requeue', 'test') RETURNING id",
             (long long)item);
    PGresult *res = vt_pq_ok(c, sql);
    int64_t held = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    PQclear(res);
    vt_register(&srv, "feed_open", "b", NULL); /* commits held + 1 */
    int64_t later = vt_sql_long("SELECT max(id) FROM audit");
    assert_true(later > held);
    int n = read_feed(start, NULL, ids, 4096);
    for (int i = 0; i < n; i++)
        assert_true(ids[i] < held); /* nothing past the open one */
    PQclear(vt_pq_ok(c, "COMMIT"));
    PQfinish(c);
    n = read_feed(start, NULL, ids, 4096);
    assert_int_equal(n, 2);
    assert_int_equal(ids[0], held);
    assert_int_equal(ids[1], later);
}

static void test_list_filters_and_order(void **state)
{
    (void)state;
    for (int i = 0; i < 5; i++) {
        char ident[16];
        snprintf(ident, sizeof(ident), "l%d", i);
        vt_register(&srv, "lists", ident, NULL);
    }
    vt_claim a = vt_claim1(&srv, "lists");
    vt_resp r =
        vt_dispose(&srv, &a, "\"disposition\": \"reject_source\", \"reason_code\": \"spam\"");
    vt_resp_free(&r);
    vt_claim b[2];
    assert_int_equal(vt_claim_n(&srv, "lists", 2, 300, b), 2);
    r = vt_http(&srv, "GET", "/v1/items?flow_step_id=lists&order=desc&limit=2", VT_READER, NULL,
                NULL);
    assert_int_equal(r.status, 200);
    const cJSON *items = cJSON_GetObjectItem(r.json, "items");
    assert_int_equal(cJSON_GetArraySize(items), 2);
    long first = (long)vt_num(items->child, "id"), second = (long)vt_num(items->child->next, "id");
    assert_int_equal(first, vt_sql_long("SELECT max(id) FROM items WHERE flow_step_id = 'lists'"));
    assert_true(second < first);
    assert_int_equal((long)vt_num(r.json, "next_after"), second);
    vt_resp_free(&r);
    char path[160];
    snprintf(path, sizeof(path), "/v1/items?flow_step_id=lists&order=desc&after=%ld", second);
    r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "items")), 3);
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(r.json, "next_after")));
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/items?flow_step_id=lists&reason_code=spam", VT_READER, NULL,
                NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "items")), 1);
    assert_int_equal((long)vt_num(cJSON_GetObjectItem(r.json, "items")->child, "id"), a.item_id);
    vt_resp_free(&r);
    /* vt_claim_n's worker is the one vt_claim1 uses too: the three claimed items */
    long by_worker = vt_sql_long("SELECT count(*) FROM items i JOIN jobs j ON j.id ="
                                 " i.current_job_id WHERE i.flow_step_id = 'lists'");
    char *worker = vt_sql("SELECT worker_id FROM jobs WHERE id = %lld", (long long)b[0].job_id);
    snprintf(path, sizeof(path), "/v1/items?flow_step_id=lists&worker_id=%s", worker);
    r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "items")), by_worker);
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/items?flow_step_id=lists&worker_id=nobody", VT_READER, NULL,
                NULL);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(r.json, "items")), 0);
    vt_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/jobs?item_id=%lld&reason_code=spam&worker_id=%s&order=desc",
             (long long)a.item_id, worker);
    r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    items = cJSON_GetObjectItem(r.json, "jobs");
    assert_int_equal(cJSON_GetArraySize(items), 1);
    assert_int_equal((long)vt_num(items->child, "id"), a.job_id);
    vt_resp_free(&r);
    snprintf(path, sizeof(path), "/v1/jobs?flow_step_id=lists&order=desc");
    r = vt_http(&srv, "GET", path, VT_READER, NULL, NULL);
    items = cJSON_GetObjectItem(r.json, "jobs");
    assert_int_equal(cJSON_GetArraySize(items), 3);
    assert_true(vt_num(items->child, "id") > vt_num(items->child->next, "id"));
    vt_resp_free(&r);
    free(worker);
    r = vt_http(&srv, "GET", "/v1/items?order=sideways", VT_READER, NULL, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "order");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/jobs?worker_id=", VT_READER, NULL, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "worker_id");
    vt_resp_free(&r);
}

static void test_whoami_and_console_files(void **state)
{
    (void)state;
    vt_resp r = vt_http(&srv, "GET", "/v1/whoami", VT_READER, NULL, NULL);
    assert_int_equal(r.status, 200);
    assert_string_equal(vt_str(r.json, "role"), "reader");
    assert_string_equal(vt_str(r.json, "actor"), "dash");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/whoami", VT_ADMIN, NULL, NULL);
    assert_string_equal(vt_str(r.json, "role"), "admin");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/v1/whoami", NULL, NULL, NULL);
    vt_assert_error(&r, 401, "unauthorized");
    vt_resp_free(&r);
    static const struct {
        const char *path, *ctype;
    } files[] = {{"/ui/", "text/html; charset=utf-8"},
                 {"/ui/app.js", "text/javascript; charset=utf-8"},
                 {"/ui/app.css", "text/css; charset=utf-8"}};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        r = vt_http(&srv, "GET", files[i].path, NULL, NULL, NULL);
        assert_int_equal(r.status, 200);
        assert_string_equal(r.content_type, files[i].ctype);
        assert_true(strlen(r.body) > 100);
        vt_resp_free(&r);
    }
    r = vt_http(&srv, "GET", "/ui/nope.js", NULL, NULL, NULL);
    vt_assert_error(&r, 404, "not_found");
    vt_resp_free(&r);
    r = vt_http(&srv, "GET", "/ui", NULL, NULL, NULL);
    assert_int_equal(r.status, 308);
    vt_resp_free(&r);
}

/* The Content-Type verdictd must give a console file, by its extension; NULL: not a kind the
 * console uses (the test then fails: give the kind a type in h_console.c and here). */
static const char *console_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot)
        return NULL;
    if (strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    if (strcmp(dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (strcmp(dot, ".svg") == 0)
        return "image/svg+xml";
    return NULL;
}

/* Every file of ui/ in the source tree (the console's ES modules among them) is embedded and
 * served under /ui/ with its type and its bytes: a module added to ui/ cannot be missing from
 * the binary or served as application/octet-stream (a browser refuses to run it). */
static void test_console_serves_every_file(void **state)
{
    (void)state;
    DIR *dir = opendir(VERDICT_SOURCE_DIR "/ui");
    assert_non_null(dir);
    int files = 0, modules = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        char path[1024], url[512];
        struct stat st;
        snprintf(path, sizeof(path), "%s/ui/%s", VERDICT_SOURCE_DIR, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        const char *type = console_type(e->d_name);
        if (!type)
            fail_msg("ui/%s: no Content-Type is known for its kind", e->d_name);
        snprintf(url, sizeof(url), "/ui/%s", e->d_name);
        vt_resp r = vt_http(&srv, "GET", url, NULL, NULL, NULL);
        if (r.status != 200 || strcmp(r.content_type, type) != 0 ||
            strlen(r.body) != (size_t)st.st_size)
            fail_msg("%s: %ld, '%s' (want 200, '%s'), %zu bytes of %lld", url, r.status,
                     r.content_type, type, strlen(r.body), (long long)st.st_size);
        vt_resp_free(&r);
        files++;
        modules += strcmp(strrchr(e->d_name, '.'), ".js") == 0;
    }
    closedir(dir);
    assert_true(files >= 4);
    assert_true(modules >= 2); /* app.js and the modules it imports */
}

VT_SERVER_FIXTURE(srv, NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resolve_one),
        cmocka_unit_test(test_resolve_bulk_dry_run),
        cmocka_unit_test(test_requeue_bulk_dry_run),
        cmocka_unit_test(test_feed_keyset),
        cmocka_unit_test(test_feed_waits_for_open_writer),
        cmocka_unit_test(test_list_filters_and_order),
        cmocka_unit_test(test_whoami_and_console_files),
        cmocka_unit_test(test_console_serves_every_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
