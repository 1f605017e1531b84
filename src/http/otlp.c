/* otlp.c - one span per request, sent as OTLP/HTTP JSON to VERDICT_OTLP_ENDPOINT by one
 * background thread (docs/decisions/0063-otlp-export.md). A request only copies its span
 * into a bounded ring under a mutex held for the copy; a full ring drops the span (counted).
 * The sender speaks plain HTTP/1.1 over a blocking socket with 2 s timeouts; a failed send
 * loses that batch (counted) and never retries into the queue. No libmicrohttpd, no cJSON. */
#include "otlp.h"

#include <netdb.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "verdict/buf.h"
#include "verdict/util.h"

#define BATCH 256

struct vd_otlp {
    char host[256], port[8], path[256];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool stopping;
    bool failing;         /* the last send failed (logged once per change) */
    double stop_deadline; /* vd_monotonic() after which what is queued is dropped */
    size_t head, count;
    vd_span ring[VD_OTLP_QUEUE];
};

static atomic_uint_fast64_t n_exported, n_dropped, n_failed;

void vd_otlp_counts(uint64_t *exported, uint64_t *dropped, uint64_t *failed)
{
    *exported = atomic_load(&n_exported);
    *dropped = atomic_load(&n_dropped);
    *failed = atomic_load(&n_failed);
}

const char *vd_otlp_operation(const char *name)
{
    static const struct {
        const char *route, *op;
    } ops[] = {{"items.register", "send"},         {"claims", "receive"},
               {"jobs.disposition", "settle"},     {"dispositions", "settle"},
               {"jobs.session_outcome", "settle"}, {"jobs.release", "settle"}};
    for (size_t i = 0; name && i < sizeof(ops) / sizeof(ops[0]); i++) {
        if (strcmp(name, ops[i].route) == 0)
            return ops[i].op;
    }
    return "";
}

static void attr_str(vd_buf *b, bool *first, const char *key, const char *value)
{
    char esc[300] = "";
    if (!value || !*value)
        return;
    vd_json_escape(esc, sizeof(esc), 0, value);
    vd_buf_printf(b, "%s{\"key\":\"%s\",\"value\":{\"stringValue\":\"%s\"}}", *first ? "" : ",",
                  key, esc);
    *first = false;
}

static void span_json(vd_buf *b, const vd_span *s)
{
    bool first = true;
    vd_buf_printf(b,
                  "{\"traceId\":\"%s\",\"spanId\":\"%s\",%s%s%s\"flags\":%u,\"name\":\"%s%s%s\","
                  "\"kind\":2,\"startTimeUnixNano\":\"%llu\",\"endTimeUnixNano\":\"%llu\","
                  "\"attributes\":[",
                  s->trace_id, s->span_id, s->parent_span_id[0] ? "\"parentSpanId\":\"" : "",
                  s->parent_span_id, s->parent_span_id[0] ? "\"," : "", s->flags & 0xffu, s->op,
                  s->op[0] ? " " : "", s->name[0] ? s->name : "unmatched",
                  (unsigned long long)s->start_ns, (unsigned long long)s->end_ns);
    attr_str(b, &first, "http.request.method", s->method);
    attr_str(b, &first, "http.route", s->route);
    vd_buf_printf(b, "%s{\"key\":\"http.response.status_code\",\"value\":{\"intValue\":\"%d\"}}",
                  first ? "" : ",", s->status);
    first = false;
    if (s->op[0]) {
        attr_str(b, &first, "messaging.system", "verdict");
        attr_str(b, &first, "messaging.operation.type", s->op);
        attr_str(b, &first, "messaging.operation.name", s->name);
    }
    attr_str(b, &first, "error.type", s->error_type);
    attr_str(b, &first, "verdict.request_id", s->request_id);
    vd_buf_printf(b, "]");
    for (int i = 0; i < s->n_links; i++)
        vd_buf_printf(b, "%s{\"traceId\":\"%.32s\",\"spanId\":\"%.16s\"}%s",
                      i ? "," : ",\"links\":[", s->links[i], s->links[i] + 32,
                      i == s->n_links - 1 ? "]" : "");
    /* OTLP status: ERROR for a 5xx; a refusal (4xx) of a server span stays UNSET */
    vd_buf_printf(b, ",\"status\":{\"code\":%d}}", s->status >= 500 ? 2 : 0);
}

char *vd_otlp_json(const vd_span *spans, int n)
{
    vd_buf b = {0};
    vd_buf_printf(&b,
                  "{\"resourceSpans\":[{\"resource\":{\"attributes\":["
                  "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"verdictd\"}},"
                  "{\"key\":\"service.version\",\"value\":{\"stringValue\":\"%s\"}}]},"
                  "\"scopeSpans\":[{\"scope\":{\"name\":\"verdictd\",\"version\":\"%s\"},"
                  "\"spans\":[",
                  VERDICT_VERSION, VERDICT_VERSION);
    for (int i = 0; i < n; i++) {
        if (i)
            vd_buf_printf(&b, ",");
        span_json(&b, &spans[i]);
    }
    vd_buf_printf(&b, "]}]}]}");
    if (b.failed) {
        vd_buf_cleanup(&b);
        return NULL;
    }
    return vd_buf_take(&b);
}

void vd_otlp_record(vd_otlp *x, const vd_span *span)
{
    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    if (x->count == VD_OTLP_QUEUE || x->stopping) {
        pthread_mutex_unlock(&x->mu);
        atomic_fetch_add(&n_dropped, 1);
        return;
    }
    x->ring[(x->head + x->count) % VD_OTLP_QUEUE] = *span;
    x->count++;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

/* A connected socket to host:port with 2 s send and receive timeouts, or -1. */
static int dial(const char *host, const char *port)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    struct timeval tv = {2, 0};
    int fd = -1;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

static bool send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* POST body to the endpoint: true on a 2xx answer. */
static bool post(const vd_otlp *x, const char *body)
{
    char head[800], answer[64] = "";
    size_t len = strlen(body);
    ssize_t got = 0;
    bool ok = false;
    int fd = dial(x->host, x->port);
    if (fd < 0)
        return false;
    snprintf(head, sizeof(head),
             "POST %s HTTP/1.1\r\nHost: %s:%s\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nConnection: close\r\n\r\n",
             x->path, x->host, x->port, len);
    if (send_all(fd, head, strlen(head)) && send_all(fd, body, len)) {
        got = recv(fd, answer, sizeof(answer) - 1, 0);
        answer[got > 0 ? got : 0] = '\0';
        ok = strncmp(answer, "HTTP/1.", 7) == 0 && answer[8] == ' ' && answer[9] == '2';
    }
    close(fd);
    return ok;
}

/* Send up to BATCH queued spans (none: nothing). Called without the lock. */
static void send_batch(vd_otlp *x, vd_span *batch)
{
    int n = 0;
    pthread_mutex_lock(&x->mu);
    while (x->count > 0 && n < BATCH) {
        batch[n++] = x->ring[x->head];
        x->head = (x->head + 1) % VD_OTLP_QUEUE;
        x->count--;
    }
    pthread_mutex_unlock(&x->mu);
    if (n == 0)
        return;
    char *body = vd_otlp_json(batch, n);
    bool ok = body && post(x, body);
    free(body);
    atomic_fetch_add(ok ? &n_exported : &n_failed, (uint_fast64_t)n);
    if (ok == x->failing) /* log the changes only, not every batch */
        vd_logf(ok ? VD_LOG_INFO : VD_LOG_WARN, "otlp: %s http://%s:%s%s",
                ok ? "sending again to"
                   : "cannot send spans (counted in verdict_otlp_spans_total) to",
                x->host, x->port, x->path);
    x->failing = !ok;
}

/* Stopping, and past the deadline: what is still queued is dropped (counted). */
static bool give_up(vd_otlp *x)
{
    bool late = false;
    pthread_mutex_lock(&x->mu);
    late = x->stopping && vd_monotonic() > x->stop_deadline;
    if (late) {
        atomic_fetch_add(&n_dropped, (uint_fast64_t)x->count);
        x->count = 0;
    }
    pthread_mutex_unlock(&x->mu);
    return late;
}

static void *run(void *arg)
{
    vd_otlp *x = arg;
    vd_span *batch = malloc(sizeof(vd_span) * BATCH);
    for (;;) {
        pthread_mutex_lock(&x->mu);
        while (x->count == 0 && !x->stopping)
            pthread_cond_wait(&x->cv, &x->mu);
        bool stop = x->stopping && x->count == 0;
        pthread_mutex_unlock(&x->mu);
        if (stop || !batch || give_up(x))
            break;
        send_batch(x, batch);
    }
    free(batch);
    return NULL;
}

/* "http://host[:port][/path]" (host may be [v6]) into x; false when malformed. */
static bool parse_endpoint(vd_otlp *x, const char *url)
{
    const char *h = url + 7, *end = NULL, *slash = NULL, *colon = NULL;
    size_t hl = 0;
    if (strncmp(url, "http://", 7) != 0)
        return false;
    slash = strchr(h, '/');
    end = slash ? slash : h + strlen(h);
    if (*h == '[') {
        const char *close = memchr(h, ']', (size_t)(end - h));
        if (!close)
            return false;
        colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
        h++;
        hl = (size_t)(close - h);
    } else {
        colon = memchr(h, ':', (size_t)(end - h));
        hl = (size_t)((colon ? colon : end) - h);
    }
    if (hl == 0 || hl >= sizeof(x->host) || (colon && (size_t)(end - colon - 1) >= sizeof(x->port)))
        return false;
    memcpy(x->host, h, hl);
    x->host[hl] = '\0';
    snprintf(x->port, sizeof(x->port), "%.*s", colon ? (int)(end - colon - 1) : 2,
             colon ? colon + 1 : "80");
    /* the collector's OTLP/HTTP path that verdictd posts to (not a route of verdictd) */
    snprintf(x->path, sizeof(x->path), "%s", slash && slash[1] ? slash : "/v1/traces");
    return x->port[0] != '\0';
}

vd_otlp *vd_otlp_start(const char *endpoint)
{
    vd_otlp *x = NULL;
    if (!endpoint || !*endpoint)
        return NULL;
    x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    if (!parse_endpoint(x, endpoint)) {
        vd_logf(VD_LOG_ERROR, "otlp: VERDICT_OTLP_ENDPOINT is not http://host[:port][/path]");
        free(x);
        return NULL;
    }
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    if (pthread_create(&x->thread, NULL, run, x) != 0) {
        pthread_mutex_destroy(&x->mu);
        pthread_cond_destroy(&x->cv);
        free(x);
        return NULL;
    }
    vd_logf(VD_LOG_INFO, "otlp: exporting spans to http://%s:%s%s", x->host, x->port, x->path);
    return x;
}

void vd_otlp_stop(vd_otlp *x)
{
    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    x->stopping = true;
    x->stop_deadline = vd_monotonic() + 2.0; /* then one send in flight, 4 s at most */
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    pthread_join(x->thread, NULL);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x);
}
