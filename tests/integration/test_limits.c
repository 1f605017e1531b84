/* test_limits.c - hostile callers: a regex denial of service is cut off by the
 * matching budget and the adjudication caps; a declared Content-Length above the cap and an
 * unsupported transfer coding are refused at once in the JSON envelope; error messages stay
 * valid UTF-8; one address holding 2,000 trickling and idle connections neither starves a
 * client from another address nor keeps a trickling connection past the read deadline. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"

#define HOSTILE 2000
#define READ_TIMEOUT_MS 2000

static vt_server srv;

/* A TCP connection to the server from the given loopback source address (-1 on failure). */
static int dial(const char *from)
{
    struct sockaddr_in src = {0}, dst = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    src.sin_family = dst.sin_family = AF_INET;
    inet_pton(AF_INET, from, &src.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    dst.sin_port = htons((uint16_t)srv.port);
    if (bind(fd, (struct sockaddr *)&src, sizeof(src)) != 0 ||
        connect(fd, (struct sockaddr *)&dst, sizeof(dst)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Read until the peer closes or `secs` pass; returns the bytes read (NUL-terminated). */
static size_t read_all(int fd, char *buf, size_t cap, double secs)
{
    size_t n = 0;
    double end = vd_monotonic() + secs;
    while (n + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        int ms = (int)((end - vd_monotonic()) * 1000);
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            break;
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    buf[n] = '\0';
    return n;
}

/* Send raw bytes from 127.0.0.1, read the answer (the server closes); returns the status. */
static int raw(const char *req, char *out, size_t cap, double *secs)
{
    int fd = dial("127.0.0.1"), status = 0;
    double t0 = vd_monotonic();
    assert_true(fd >= 0);
    assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
    read_all(fd, out, cap, 5.0);
    *secs = vd_monotonic() - t0;
    close(fd);
    sscanf(out, "HTTP/1.1 %d", &status);
    return status;
}

static const char *body_of(const char *answer)
{
    const char *b = strstr(answer, "\r\n\r\n");
    return b ? b + 4 : "";
}

static void assert_envelope(const char *answer, const char *code)
{
    cJSON *j = cJSON_Parse(body_of(answer));
    assert_non_null(j);
    assert_string_equal(vt_str(j, "error"), code);
    cJSON_Delete(j);
}

static void test_limits_declared_length_and_codings(void **state)
{
    char out[4096];
    double secs = 0;
    (void)state;
    /* refused from the headers: no body byte is ever sent, and the answer comes at once */
    assert_int_equal(raw("POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                         "\r\nContent-Length: 99999999\r\n\r\n",
                         out, sizeof(out), &secs),
                     413);
    assert_true(secs < 1.0);
    assert_envelope(out, "payload_too_large");
    assert_non_null(strstr(out, "\"field\":\"Content-Length\""));
    assert_int_equal(raw("POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                         "\r\nTransfer-Encoding: identity\r\n\r\n",
                         out, sizeof(out), &secs),
                     501);
    assert_true(secs < 1.0);
    assert_envelope(out, "unsupported_transfer_coding");
    assert_int_equal(raw("POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json"
                         "\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                         out, sizeof(out), &secs),
                     501);
    assert_true(secs < 1.0);
    /* libmicrohttpd answers a malformed length itself (documented): a status, at once */
    assert_int_equal(raw("POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", out,
                         sizeof(out), &secs),
                     400);
    assert_true(secs < 1.0);
}

static void test_limits_utf8_messages(void **state)
{
    const char *reqs[] = {
        "GET /v1/items/%c0%af HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
        "Authorization: Bearer " VT_ADMIN "\r\n\r\n",
        "DELETE /v1/items/%c0%af HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "POST /v1/items HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: text/\xc0\xaf"
        "\r\nAuthorization: Bearer " VT_ADMIN "\r\nContent-Length: 2\r\n\r\n{}",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        char out[4096];
        double secs = 0;
        int status = raw(reqs[i], out, sizeof(out), &secs);
        const char *b = body_of(out);
        if (status != 404 && status != 405 && status != 415)
            fail_msg("status %d: %s", status, out);
        cJSON *j = cJSON_Parse(b);
        assert_non_null(j);
        const char *msg = vt_str(j, "message");
        assert_non_null(msg);
        /* no byte of the message is outside UTF-8; the bad bytes are shown escaped */
        for (const unsigned char *p = (const unsigned char *)b; *p; p++)
            assert_true(*p < 0x80);
        assert_non_null(strstr(msg, "\\xC0\\xAF"));
        cJSON_Delete(j);
    }
}

static char *regex_body(int run, int npatterns, size_t text_len)
{
    size_t cap = text_len + 64 * (size_t)npatterns + 512;
    char *b = malloc(cap);
    size_t n = 0;
    assert_non_null(b);
    n += (size_t)snprintf(b + n, cap - n,
                          "{\"session\": {\"returncode\": 0, \"termination\":"
                          " \"completed\", \"channel\": \"channel_b\", \"parsed\": {\"subtype\":"
                          " \"success\", \"result\": \"");
    for (size_t i = 0; i < text_len; i++)
        b[n++] = (i % (size_t)(run + 1)) == (size_t)run ? '!' : 'a';
    n += (size_t)snprintf(b + n, cap - n, "\"}, \"expected_output_patterns\": [");
    for (int i = 0; i < npatterns; i++)
        n += (size_t)snprintf(b + n, cap - n, "%s\"(a+)+c|b\"", i ? ", " : "");
    snprintf(b + n, cap - n, "]}}");
    return b;
}

static void test_limits_regex_budget(void **state)
{
    (void)state;
    /* a regex denial of service reproduced: 18 KB, eight (a+)+c|b; runs of 14 a's stay under
     * the per-position match limit, so only the call's budget stops it (before: 8.7 s; the
     * report that found it measured 64.7 s with its text) */
    char *body = regex_body(14, 8, 18000);
    double t0 = vd_monotonic();
    vt_resp r = vt_http(&srv, "POST", "/v1/adjudications", VT_WORKER, body, NULL);
    double secs = vd_monotonic() - t0;
    fprintf(stderr, "regex request: %ld in %.0f ms\n", r.status, secs * 1000);
    vt_assert_error(&r, 422, "match_budget_exhausted");
    assert_true(secs < 3.0);
    vt_resp_free(&r);
    free(body);
    /* caps: too many patterns, a pattern too long, too much text */
    body = regex_body(3, 33, 10);
    r = vt_http(&srv, "POST", "/v1/adjudications", VT_WORKER, body, NULL);
    vt_assert_error(&r, 400, "invalid_field");
    assert_string_equal(vt_str(r.json, "field"), "session.expected_output_patterns");
    vt_resp_free(&r);
    free(body);
    {
        char *longp = malloc(1500);
        assert_non_null(longp);
        memset(longp, 'x', 1500);
        int n = snprintf(longp, 1500,
                         "{\"session\": {\"stdout\": \"\", "
                         "\"expected_output_patterns\": [\"ok\", \"");
        longp[n] = 'x'; /* snprintf's NUL: the pattern goes on */
        memcpy(longp + n + 1030, "\"]}}", 5);
        r = vt_http(&srv, "POST", "/v1/adjudications", VT_WORKER, longp, NULL);
        vt_assert_error(&r, 400, "invalid_field");
        assert_string_equal(vt_str(r.json, "field"), "session.expected_output_patterns[1]");
        vt_resp_free(&r);
        free(longp);
    }
    body = regex_body(3, 1, 300000);
    r = vt_http(&srv, "POST", "/v1/adjudications", VT_WORKER, body, NULL);
    vt_assert_error(&r, 413, "payload_too_large");
    assert_string_equal(vt_str(r.json, "field"), "session");
    vt_resp_free(&r);
    free(body);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One request on a fresh connection from 127.0.0.2; its time, or -1 if unanswered. */
static double probe(const char *path)
{
    char req[200], out[4096];
    double t0 = vd_monotonic();
    int fd = dial("127.0.0.2"), status = 0;
    if (fd < 0)
        return -1;
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    if (send(fd, req, strlen(req), 0) < 0) {
        close(fd);
        return -1;
    }
    read_all(fd, out, sizeof(out), 5.0);
    close(fd);
    sscanf(out, "HTTP/1.1 %d", &status);
    return status == 200 ? vd_monotonic() - t0 : -1;
}

static void test_limits_connection_flood(void **state)
{
    static int fds[HOSTILE];
    double lat[100];
    struct rlimit rl;
    int opened = 0, held = 0;
    (void)state;
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    /* one address opens 2,000 connections: half send a partial request, half nothing */
    for (int i = 0; i < HOSTILE; i++) {
        fds[i] = dial("127.0.0.1");
        if (fds[i] < 0)
            continue;
        opened++;
        if (i % 2 == 0 && send(fds[i], "GET /healthz HTTP/1.1\r\n", 23, MSG_NOSIGNAL) < 0) {
            close(fds[i]);
            fds[i] = -1;
        }
    }
    /* a trickler from a third address: one byte every 200 ms never finishes its headers */
    int trickler = dial("127.0.0.3");
    double t_trickle = vd_monotonic(), closed_after = -1;
    assert_true(trickler >= 0);
    for (int i = 0; i < 100; i++) {
        char b = 'X';
        if (i % 4 == 0) { /* keep the hostile ones trickling too */
            for (int k = 0; k < HOSTILE; k += 2)
                if (fds[k] >= 0 && send(fds[k], "X", 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
                    close(fds[k]);
                    fds[k] = -1;
                }
        }
        if (closed_after < 0 && send(trickler, &b, 1, MSG_NOSIGNAL) < 0)
            closed_after = vd_monotonic() - t_trickle;
        lat[i] = probe(i % 2 ? "/healthz" : "/openapi.json");
        assert_true(lat[i] >= 0); /* every probe answered */
    }
    if (closed_after < 0) { /* the close may show as EOF rather than a send error */
        char buf[256];
        struct pollfd p = {trickler, POLLIN, 0};
        if (poll(&p, 1, 3000) > 0 && recv(trickler, buf, sizeof(buf), 0) >= 0)
            closed_after = vd_monotonic() - t_trickle;
    }
    close(trickler);
    for (int i = 0; i < HOSTILE; i++) {
        if (fds[i] >= 0) {
            char c;
            /* still open from the server's side? (refused ones read EOF at once) */
            if (recv(fds[i], &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN)
                held++;
            close(fds[i]);
        }
    }
    qsort(lat, 100, sizeof(double), cmp_double);
    fprintf(stderr,
            "%d hostile connections opened, %d still held at the end; probes from "
            "127.0.0.2: p50 %.1f ms, p99 %.1f ms; trickler closed after %.1f s\n",
            opened, held, lat[50] * 1000, lat[98] * 1000, closed_after);
    assert_true(lat[98] < 0.100);
    assert_true(held <= 64);
    assert_true(closed_after > 0 && closed_after < READ_TIMEOUT_MS / 1000.0 + 2.0);
}

VT_SERVER_FIXTURE(srv, "VERDICT_MAX_CONNECTIONS_PER_IP=64", "VERDICT_READ_TIMEOUT_MS=2000",
                  "VERDICT_MAX_BODY_BYTES=2097152", "VERDICT_LOG_LEVEL=warn", NULL)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_declared_length_and_codings),
        cmocka_unit_test(test_limits_utf8_messages),
        cmocka_unit_test(test_limits_regex_budget),
        cmocka_unit_test(test_limits_connection_flood),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
