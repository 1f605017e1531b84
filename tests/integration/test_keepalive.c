/* test_keepalive.c - idle keep-alive connections (VERDICT_HTTP_IDLE_SECONDS, longer than the
 * read deadline): every kept-alive answer says `Keep-Alive: timeout=N`; a connection idle for
 * longer than the read deadline but within N still serves its next request; past N it is
 * closed; a request begun on a kept-alive connection still has only the read deadline; a
 * fresh connection that sends nothing is closed at the read deadline, not the idle limit. */
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
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"

static vt_server srv;
VT_SERVER_FIXTURE(srv, "VERDICT_READ_TIMEOUT_MS=1000", "VERDICT_HTTP_IDLE_SECONDS=3", NULL)

static const char healthz[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

static int dial(void)
{
    struct sockaddr_in a = {0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)srv.port);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    return fd;
}

/* Read one answer (headers and a Content-Length body) within secs; its length, 0 when the
 * connection was closed (or nothing came) first. */
static size_t read_answer(int fd, char *buf, size_t cap, double secs)
{
    size_t n = 0;
    double end = vd_monotonic() + secs;
    buf[0] = '\0';
    while (n + 1 < cap) {
        const char *hdr_end = strstr(buf, "\r\n\r\n");
        const char *cl = strstr(buf, "Content-Length: ");
        if (hdr_end && cl && n >= (size_t)(hdr_end + 4 - buf) + strtoul(cl + 16, NULL, 10))
            return n;
        struct pollfd p = {fd, POLLIN, 0};
        int ms = (int)((end - vd_monotonic()) * 1000);
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            return 0;
        ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
        if (k <= 0)
            return 0;
        n += (size_t)k;
        buf[n] = '\0';
    }
    return n;
}

/* Seconds until the server closes fd (recv 0 or an error), at most secs. */
static double until_closed(int fd, double secs)
{
    char buf[512];
    double t0 = vd_monotonic(), end = t0 + secs;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int ms = (int)((end - vd_monotonic()) * 1000);
        if (ms <= 0)
            return secs;
        if (poll(&p, 1, ms) > 0 && recv(fd, buf, sizeof(buf), 0) <= 0)
            return vd_monotonic() - t0;
    }
}

static void ask(int fd, char *buf, size_t cap)
{
    assert_int_equal(send(fd, healthz, strlen(healthz), MSG_NOSIGNAL), (ssize_t)strlen(healthz));
    if (read_answer(fd, buf, cap, 3.0) == 0)
        fail_msg("no answer on the kept-alive connection");
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
}

static void test_keepalive_idle_within_limit(void **state)
{
    char buf[4096];
    int fd = dial();
    (void)state;
    ask(fd, buf, sizeof(buf));
    assert_non_null(strstr(buf, "Keep-Alive: timeout=3\r\n"));
    vt_sleep_ms(2000); /* past the 1 s read deadline, within the 3 s idle limit */
    ask(fd, buf, sizeof(buf));
    double idle = until_closed(fd, 6.0);
    if (idle < 2.5 || idle > 4.5)
        fail_msg("an idle kept-alive connection was closed after %.2f s (want ~3 s)", idle);
    close(fd);
}

static void test_keepalive_request_keeps_read_deadline(void **state)
{
    char buf[4096];
    int fd = dial();
    double t0;
    (void)state;
    ask(fd, buf, sizeof(buf));
    vt_sleep_ms(500);
    /* a request line, then headers trickled and never finished */
    static const char start[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
    assert_int_equal(send(fd, start, strlen(start), MSG_NOSIGNAL), (ssize_t)strlen(start));
    t0 = vd_monotonic();
    while (vd_monotonic() - t0 < 4.0) {
        if (send(fd, "X-A: b\r\n", 8, MSG_NOSIGNAL) != 8)
            break;
        if (until_closed(fd, 0.3) < 0.3)
            break;
    }
    double took = vd_monotonic() - t0;
    if (took > 2.0)
        fail_msg("a trickled request on a kept-alive connection lived %.2f s (deadline 1 s)", took);
    close(fd);
}

static void test_keepalive_fresh_silent_connection(void **state)
{
    int fd = dial();
    (void)state;
    double took = until_closed(fd, 5.0);
    if (took > 2.0)
        fail_msg("a silent new connection lived %.2f s (read deadline 1 s)", took);
    close(fd);
}

/* A client that asks to close gets Connection: close and no Keep-Alive hint beside it. */
static void test_keepalive_client_close_no_hint(void **state)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    char buf[4096];
    int fd = dial();
    (void)state;
    assert_int_equal(send(fd, req, strlen(req), MSG_NOSIGNAL), (ssize_t)strlen(req));
    if (read_answer(fd, buf, sizeof(buf), 3.0) == 0)
        fail_msg("no answer to a request with Connection: close");
    assert_non_null(strstr(buf, "HTTP/1.1 200"));
    assert_non_null(strstr(buf, "Connection: close\r\n"));
    assert_null(strstr(buf, "Keep-Alive:"));
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keepalive_client_close_no_hint),
        cmocka_unit_test(test_keepalive_idle_within_limit),
        cmocka_unit_test(test_keepalive_request_keeps_read_deadline),
        cmocka_unit_test(test_keepalive_fresh_silent_connection),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
