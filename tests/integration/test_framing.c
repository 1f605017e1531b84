/* test_framing.c - broken framing and versions, byte for byte over a raw socket: what
 * verdict answers in its JSON envelope (a transfer coding it cannot delimit, a declared body
 * over the cap, a request during a stop is in test_shutdown.c) and what libmicrohttpd 0.9.75
 * answers itself, with its own HTML page, before verdict sees the request (an HTTP/2 preface
 * or request line: 505; a malformed Content-Length or header line, a malformed chunk: 400; a
 * Content-Length beyond 2^64: 413; a request line over the connection's memory: 414; headers
 * over it: 431). For those the test holds what a client can rely on: the status, `Connection:
 * close`, and a server that goes on serving. */
#define _GNU_SOURCE /* strcasestr */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"

static vt_server srv;
VT_SERVER_FIXTURE(srv, NULL)

/* Send req (len bytes) on a new connection and read until the server closes it (3 s at
 * most); the answer's status, its text in out. */
static int exchange(const char *req, size_t len, char *out, size_t cap)
{
    struct sockaddr_in a = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0), status = 0;
    size_t n = 0;
    double end = vd_monotonic() + 3.0;
    assert_true(fd >= 0);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)srv.port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    send(fd, req, len, MSG_NOSIGNAL); /* the server may close before it has read everything */
    while (n + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        int ms = (int)((end - vd_monotonic()) * 1000);
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            break;
        ssize_t k = recv(fd, out + n, cap - 1 - n, 0);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    out[n] = '\0';
    close(fd);
    sscanf(out, "HTTP/1.%*d %d", &status);
    return status;
}

static bool has_header(const char *answer, const char *line)
{
    const char *end = strstr(answer, "\r\n\r\n");
    const char *at = strcasestr(answer, line);
    return at && end && at < end;
}

typedef struct framing_case {
    const char *name;
    const char *head; /* the request, or its start when pad > 0 */
    size_t pad;       /* 'a' bytes appended, then tail */
    const char *tail;
    int status;
    bool envelope; /* answered by verdict in the JSON envelope */
} framing_case;

static const framing_case cases[] = {
    {"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0, "", 505, false},
    {"HTTP/2.0 request line", "GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n", 0, "", 505, false},
    {"Content-Length -1", "POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n", 0, "",
     400, false},
    {"Content-Length past 2^64",
     "POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", 0, "",
     413, false},
    {"header line without a colon", "GET /healthz HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n", 0, "",
     400, false},
    {"malformed chunk",
     "POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
     0, "", 400, false},
    {"request line too long", "GET /", 40000, " HTTP/1.1\r\nHost: x\r\n\r\n", 414, false},
    {"headers too long", "GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: ", 40000, "\r\n\r\n", 431,
     false},
    {"a transfer coding verdict cannot delimit",
     "POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     "Transfer-Encoding: gzip\r\n\r\n",
     0, "", 501, true},
    {"a declared body over the cap",
     "POST /v1/items HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
     "Content-Length: 99999999\r\n\r\n",
     0, "", 413, true},
};

static void check_case(const framing_case *c, char *req, char *out, size_t cap)
{
    size_t hl = strlen(c->head), tl = strlen(c->tail);
    memcpy(req, c->head, hl);
    memset(req + hl, 'a', c->pad);
    memcpy(req + hl + c->pad, c->tail, tl);
    int status = exchange(req, hl + c->pad + tl, out, cap);
    if (status != c->status)
        fail_msg("%s: status %d, want %d: %.200s", c->name, status, c->status, out);
    if (!has_header(out, "\r\nConnection: close\r\n"))
        fail_msg("%s: no 'Connection: close': %.300s", c->name, out);
    if (c->envelope) {
        const char *body = strstr(out, "\r\n\r\n");
        cJSON *j = cJSON_Parse(body ? body + 4 : "");
        assert_non_null(j);
        assert_true(cJSON_IsFalse(cJSON_GetObjectItem(j, "success")));
        assert_non_null(vt_str(j, "error"));
        cJSON_Delete(j);
    }
}

static void test_framing_cases(void **state)
{
    char *req = malloc(48000), *out = malloc(65536);
    (void)state;
    assert_non_null(req);
    assert_non_null(out);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        check_case(&cases[i], req, out, 65536);
        vt_resp r = vt_http(&srv, "GET", "/healthz", NULL, NULL, NULL);
        if (r.status != 200)
            fail_msg("after '%s' the server no longer answers", cases[i].name);
        vt_resp_free(&r);
    }
    free(req);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framing_cases),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
