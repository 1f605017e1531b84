/* vt.c - integration-test support (see vt.h): per-program database, child verdictd, HTTP
 * client and SQL helpers. Test code only; asserts through cmocka. */
#include "vt.h"

#include <curl/curl.h>
#include <libpq-fe.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <cmocka.h>

static char db_name[64];
static char db_url[512];
static char admin_url[512];

static void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static void admin_exec(const char *sql)
{
    PGconn *c = PQconnectdb(admin_url);
    PGresult *r = NULL;
    if (PQstatus(c) != CONNECTION_OK)
        fatal("vt: connect admin: %s", PQerrorMessage(c));
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK)
        fatal("vt: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

const char *vt_db_setup(void)
{
    const char *base = getenv("VERDICT_TEST_DATABASE_URL");
    char sql[160];
    if (!base || !*base) {
        fprintf(stderr, "VERDICT_TEST_DATABASE_URL is not set: skipping\n");
        exit(77);
    }
    snprintf(admin_url, sizeof(admin_url), "%s", base);
    snprintf(db_name, sizeof(db_name), "vt_%d_%ld", (int)getpid(), (long)time(NULL));
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", db_name);
    admin_exec(sql);
    snprintf(db_url, sizeof(db_url), "%s dbname=%s", base, db_name);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return db_url;
}

void vt_http_thread_cleanup(void);

const char *vt_db_setup_url(void)
{
    return db_url;
}

void vt_db_teardown(void)
{
    char sql[160];
    vt_http_thread_cleanup();
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", db_name);
    admin_exec(sql);
    curl_global_cleanup();
}

static char *vt_vsql(const char *fmt, va_list ap)
{
    char sql[8192];
    PGconn *c = PQconnectdb(db_url);
    PGresult *r = NULL;
    char *out = NULL;
    vsnprintf(sql, sizeof(sql), fmt, ap);
    if (PQstatus(c) != CONNECTION_OK)
        fatal("vt_sql: connect: %s", PQerrorMessage(c));
    r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
        fatal("vt_sql: %s: %s", sql, PQerrorMessage(c));
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) > 0 && !PQgetisnull(r, 0, 0))
        out = strdup(PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
    return out;
}

char *vt_sql(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = vt_vsql(fmt, ap);
    va_end(ap);
    return out;
}

void vt_seed_items(const char *flow, const char *prefix, int n, int max_attempts, int max_defers)
{
    free(vt_sql("WITH s AS (INSERT INTO item_sources (flow_step_id, source_type, item_identifier)"
                "  SELECT '%s', 'rss', '%s' || g FROM generate_series(1, %d) g"
                "  RETURNING id, flow_step_id)"
                " INSERT INTO items (id, flow_step_id, max_attempts, max_defers)"
                " SELECT id, flow_step_id, %d, %d FROM s",
                flow, prefix, n, max_attempts, max_defers));
}

void vt_seed_flow(const char *flow, int n)
{
    free(
        vt_sql("INSERT INTO flow_steps (flow_step_id) VALUES ('%s') ON CONFLICT DO NOTHING", flow));
    vt_seed_items(flow, flow, n, 5, 3);
}

void vt_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

PGresult *vt_pq_ok(PGconn *c, const char *sql)
{
    PGresult *res = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(res);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%.80s: %s", sql, PQerrorMessage(c));
    return res;
}

long vt_sql_long(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = vt_vsql(fmt, ap);
    va_end(ap);
    long v = out ? strtol(out, NULL, 10) : -1;
    free(out);
    return v;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    int port = 0;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        fatal("vt: no free port");
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

void vt_server_start(vt_server *s, const char *const *env)
{
    vt_server_start_listen(s, "127.0.0.1", env);
}

void vt_server_start_listen(vt_server *s, const char *host, const char *const *env)
{
    char listen[64], dburl[600];
    memset(s, 0, sizeof(*s));
    s->port = free_port();
    snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);
    snprintf(s->log_path, sizeof(s->log_path), "/tmp/verdictd-test-%d-%d.log", (int)getpid(),
             s->port);
    snprintf(listen, sizeof(listen), "%s:%d", host, s->port);
    snprintf(dburl, sizeof(dburl), "%s", db_url);
    s->pid = fork();
    if (s->pid == 0) {
        FILE *log = freopen(s->log_path, "w", stderr);
        (void)log;
        /* a test that dies (fatal, abort, ctest's timeout) takes its server with it: a
         * leftover verdictd would hold ctest's output pipe open and hang the run */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        setenv("VERDICT_DATABASE_URL", dburl, 1);
        setenv("VERDICT_LISTEN", listen, 1);
        setenv("VERDICT_API_KEYS", VT_KEYS, 1);
        setenv("VERDICT_THREADS", "4", 0);
        setenv("VERDICT_LOG_LEVEL", "info", 0);
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        /* VT_VERDICTD: another binary (e.g. an older build, to show a test fails without a
         * change) */
        execl(getenv("VT_VERDICTD") ? getenv("VT_VERDICTD") : VERDICTD_PATH, "verdictd", "serve",
              (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 300; i++) {
        vt_resp r = vt_http(s, "GET", "/healthz", NULL, NULL, NULL);
        long st = r.status;
        vt_resp_free(&r);
        if (st == 200)
            return;
        int status = 0;
        if (waitpid(s->pid, &status, WNOHANG) == s->pid)
            fatal("vt: verdictd exited at start (see %s)", s->log_path);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fatal("vt: verdictd did not answer /healthz (see %s)", s->log_path);
}

void vt_server_stop(vt_server *s)
{
    int status = 0;
    if (s->pid <= 0)
        return;
    kill(s->pid, SIGTERM);
    waitpid(s->pid, &status, 0);
    s->pid = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "tail -n 60 %s >&2", s->log_path);
        if (system(cmd) != 0)
            fprintf(stderr, "(no log)\n");
    }
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    unlink(s->log_path);
}

typedef struct growbuf {
    char *data;
    size_t len;
} growbuf;

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    growbuf *b = ud;
    size_t add = size * n;
    char *d = realloc(b->data, b->len + add + 1);
    if (!d)
        return 0;
    memcpy(d + b->len, p, add);
    b->data = d;
    b->len += add;
    b->data[b->len] = '\0';
    return add;
}

static void header_value(const char *line, size_t len, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    if (len <= nl + 1 || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return;
    const char *v = line + nl + 1;
    while (*v == ' ')
        v++;
    size_t vl = len - (size_t)(v - line);
    while (vl > 0 && (v[vl - 1] == '\r' || v[vl - 1] == '\n'))
        vl--;
    if (vl >= cap)
        vl = cap - 1;
    memcpy(out, v, vl);
    out[vl] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *ud)
{
    vt_resp *r = ud;
    char replayed[16] = "";
    header_value(p, size * n, "X-Request-Id", r->request_id, sizeof(r->request_id));
    header_value(p, size * n, "Retry-After", r->retry_after, sizeof(r->retry_after));
    header_value(p, size * n, "Content-Type", r->content_type, sizeof(r->content_type));
    header_value(p, size * n, "Idempotent-Replayed", replayed, sizeof(replayed));
    header_value(p, size * n, "WWW-Authenticate", r->www_authenticate, sizeof(r->www_authenticate));
    header_value(p, size * n, "traceparent", r->traceparent, sizeof(r->traceparent));
    header_value(p, size * n, "tracestate", r->tracestate, sizeof(r->tracestate));
    if (strcmp(replayed, "true") == 0)
        r->replayed = true;
    return size * n;
}

static _Thread_local CURL *tl_curl;

vt_resp vt_http(const vt_server *s, const char *method, const char *path, const char *token,
                const char *body, const char *const *extra_headers)
{
    vt_resp r;
    growbuf b = {0};
    struct curl_slist *h = NULL;
    char url[2048], auth[256];
    memset(&r, 0, sizeof(r));
    if (!tl_curl)
        tl_curl = curl_easy_init();
    CURL *c = tl_curl;
    curl_easy_reset(c);
    snprintf(url, sizeof(url), "%s%s", s->base, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (token) {
        snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
        h = curl_slist_append(h, auth);
    }
    bool has_ct = false;
    for (size_t i = 0; extra_headers && extra_headers[i]; i++) {
        h = curl_slist_append(h, extra_headers[i]);
        has_ct |= strncasecmp(extra_headers[i], "Content-Type:", 13) == 0;
    }
    if (body) {
        if (!has_ct)
            h = curl_slist_append(h, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    }
    h = curl_slist_append(h, "Expect:");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    CURLcode rc = curl_easy_perform(c);
    curl_slist_free_all(h);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    r.body = b.data ? b.data : strdup("");
    r.json = cJSON_Parse(r.body);
    return r;
}

void vt_http_thread_cleanup(void)
{
    if (tl_curl)
        curl_easy_cleanup(tl_curl);
    tl_curl = NULL;
}

void vt_resp_free(vt_resp *r)
{
    cJSON_Delete(r->json);
    free(r->body);
    memset(r, 0, sizeof(*r));
}

void vt_assert_error(const vt_resp *r, long status, const char *code)
{
    if (r->status != status || !r->json)
        fprintf(stderr, "expected %ld %s, got %ld: %s\n", status, code, r->status, r->body);
    assert_int_equal(r->status, status);
    assert_non_null(r->json);
    assert_true(cJSON_IsFalse(cJSON_GetObjectItem(r->json, "success")));
    assert_string_equal(vt_str(r->json, "error"), code);
    assert_non_null(vt_str(r->json, "message"));
    assert_non_null(vt_str(r->json, "hint"));
    assert_true(cJSON_IsBool(cJSON_GetObjectItem(r->json, "retryable")));
    assert_true(r->request_id[0] != '\0');
}

/* "a.b.0.c": dotted path with array indexes. */
static const cJSON *walk(const cJSON *o, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    for (char *save = NULL, *t = strtok_r(buf, ".", &save); t && o;
         t = strtok_r(NULL, ".", &save)) {
        if (cJSON_IsArray(o))
            o = cJSON_GetArrayItem(o, (int)strtol(t, NULL, 10));
        else
            o = cJSON_GetObjectItemCaseSensitive(o, t);
    }
    return o;
}

const char *vt_str(const cJSON *o, const char *path)
{
    const cJSON *v = walk(o, path);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

double vt_num(const cJSON *o, const char *path)
{
    const cJSON *v = walk(o, path);
    return cJSON_IsNumber(v) ? v->valuedouble : -1e300;
}
