/* test_connections.c - the global connection cap under many addresses: 12 loopback addresses
 * (127.0.2.1-12), each at its per-address cap of 8, keep trickling incomplete headers into
 * connections and reopen each one that is closed (96 wanted, VERDICT_MAX_CONNECTIONS=64, a read
 * deadline of 30 s so none expires). A client from another address still gets at least 90 %
 * of its probes answered, and a kept-alive connection that completed a request before the
 * attack keeps working through it. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmocka.h>

#include "verdict/util.h"
#include "vt.h"

#define ADDRESSES 12
#define PER_ADDRESS 8
#define PROBES 20

static vt_server srv;
VT_SERVER_FIXTURE(srv, "VERDICT_MAX_CONNECTIONS=64", "VERDICT_MAX_CONNECTIONS_PER_IP=8",
                  "VERDICT_READ_TIMEOUT_MS=30000", NULL)

static atomic_bool stop_attack;
static _Atomic long reopened;

static int dial(const char *from)
{
    struct sockaddr_in src = {0}, dst = {0};
    struct timeval tv = {1, 0};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
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

/* A slow connection: a request line and the start of a header, never finished. */
static int slow_open(const char *from)
{
    static const char start[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    int fd = dial(from);
    if (fd >= 0 && send(fd, start, strlen(start), MSG_NOSIGNAL) != (ssize_t)strlen(start)) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool closed_by_peer(int fd)
{
    char buf[256];
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, 0) > 0 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) <= 0;
}

static void *attacker(void *arg)
{
    char from[32];
    int fds[PER_ADDRESS];
    snprintf(from, sizeof(from), "127.0.2.%d", (int)(intptr_t)arg);
    for (int i = 0; i < PER_ADDRESS; i++)
        fds[i] = slow_open(from);
    while (!atomic_load(&stop_attack)) {
        for (int i = 0; i < PER_ADDRESS; i++) {
            if (fds[i] >= 0 &&
                (closed_by_peer(fds[i]) || send(fds[i], "a", 1, MSG_NOSIGNAL) != 1)) {
                close(fds[i]);
                fds[i] = -1;
            }
            if (fds[i] < 0) { /* the attack refills every slot it loses */
                fds[i] = slow_open(from);
                atomic_fetch_add(&reopened, 1);
            }
        }
        vt_sleep_ms(100);
    }
    for (int i = 0; i < PER_ADDRESS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return NULL;
}

/* Send a complete /healthz on fd and read its answer within 3 s: whether it was 200. */
static bool healthz_on(int fd)
{
    static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    char buf[2048];
    size_t n = 0;
    double end = vd_monotonic() + 3.0;
    if (fd < 0 || send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req))
        return false;
    while (n + 1 < sizeof(buf) && !strstr(buf, "\"status\":\"ok\"")) {
        struct pollfd p = {fd, POLLIN, 0};
        int ms = (int)((end - vd_monotonic()) * 1000);
        if (ms <= 0 || poll(&p, 1, ms) <= 0)
            return false;
        ssize_t k = recv(fd, buf + n, sizeof(buf) - 1 - n, 0);
        if (k <= 0)
            return false;
        n += (size_t)k;
        buf[n] = '\0';
    }
    return strncmp(buf, "HTTP/1.1 200", 12) == 0;
}

static void test_connections_many_addresses_cannot_lock_out(void **state)
{
    pthread_t t[ADDRESSES];
    int answered = 0, kept = dial("127.0.0.1");
    (void)state;
    assert_true(healthz_on(kept)); /* a fast client, kept alive through the attack */
    for (int i = 0; i < ADDRESSES; i++)
        assert_int_equal(pthread_create(&t[i], NULL, attacker, (void *)(intptr_t)(i + 1)), 0);
    vt_sleep_ms(1500); /* the cap is full of slow connections */
    for (int i = 0; i < PROBES; i++) {
        int fd = dial("127.0.0.1");
        answered += healthz_on(fd);
        if (fd >= 0)
            close(fd);
        vt_sleep_ms(150);
    }
    bool kept_ok = healthz_on(kept);
    close(kept);
    atomic_store(&stop_attack, true);
    for (int i = 0; i < ADDRESSES; i++)
        pthread_join(t[i], NULL);
    fprintf(stderr, "probes answered %d of %d; slow connections reopened %ld times\n", answered,
            PROBES, atomic_load(&reopened));
    assert_true(answered * 10 >= PROBES * 9);
    assert_true(kept_ok);
    assert_true(atomic_load(&reopened) > 0); /* the cap was reached: slow ones were shut */
    vt_resp m = vt_http(&srv, "GET", "/metrics", VT_READER, NULL, NULL);
    const char *p = m.body ? strstr(m.body, "\nverdict_http_connections_evicted_total ") : NULL;
    assert_non_null(p);
    assert_true(strtol(p + strlen("\nverdict_http_connections_evicted_total "), NULL, 10) > 0);
    vt_resp_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connections_many_addresses_cannot_lock_out),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
