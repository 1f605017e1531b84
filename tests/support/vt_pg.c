/* vt_pg.c - a PostgreSQL cluster of a test's own (initdb, start, stop, kill, log) run through
 * the shell as user postgres when we are root, and a loopback TCP proxy that drops a chosen
 * connection after the server has done the work (vt_pg.h). Test code only. */
#include "vt_pg.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* PostgreSQL's programs: VD_PG_BIN (scripts/lib.sh) or Debian's PostgreSQL 15. */
static const char *pg_bin(void)
{
    const char *bin = getenv("VD_PG_BIN");
    return bin && *bin ? bin : "/usr/lib/postgresql/15/bin";
}

static void die(const char *what)
{
    fprintf(stderr, "vt_pg: %s\n", what);
    exit(1);
}

void vt_pg_require(void)
{
    if (!getenv("VERDICT_TEST_DATABASE_URL")) {
        fprintf(stderr, "VERDICT_TEST_DATABASE_URL is not set: skipping\n");
        exit(77);
    }
}

int vt_pg_sh(const char *fmt, ...)
{
    char cmd[2048], wrapped[2300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (getuid() == 0)
        snprintf(wrapped, sizeof(wrapped), "runuser -u postgres -- sh -c '%s'", cmd);
    else
        snprintf(wrapped, sizeof(wrapped), "sh -c '%s'", cmd);
    return system(wrapped);
}

static int free_port(void)
{
    for (int i = 0; i < 200; i++) {
        int port = 20000 + (int)(((unsigned)rand() ^ (unsigned)getpid() * 7919u) % 12000u);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        int ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
        close(fd);
        if (ok)
            return port;
    }
    die("no free port");
    return 0;
}

void vt_pg_init(vt_pg *pg, const char *conf)
{
    char tmpl[] = "/tmp/vt-pg-XXXXXX";
    if (!mkdtemp(tmpl))
        die("mkdtemp");
    snprintf(pg->dir, sizeof(pg->dir), "%s", tmpl);
    if (getuid() == 0) {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "chown postgres:postgres %s", pg->dir);
        if (system(cmd) != 0)
            die("chown");
    }
    if (vt_pg_sh("%s/initdb -D %s/data -U postgres -A trust --no-sync -E UTF8 --locale=C.UTF-8 "
                 ">%s/initdb.log 2>&1",
                 pg_bin(), pg->dir, pg->dir) != 0)
        die("initdb failed");
    pg->port = free_port();
    char path[200];
    snprintf(path, sizeof(path), "%s/data/postgresql.conf", pg->dir);
    FILE *f = fopen(path, "a");
    if (!f)
        die("open postgresql.conf");
    fprintf(f,
            "port = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\n"
            "max_connections = 200\n%s\n",
            pg->port, pg->dir, conf ? conf : "");
    fclose(f);
    snprintf(pg->url, sizeof(pg->url),
             "host=127.0.0.1 port=%d user=postgres dbname=postgres sslmode=disable "
             "gssencmode=disable",
             pg->port);
}

void vt_pg_start(vt_pg *pg)
{
    if (vt_pg_sh("%s/pg_ctl -D %s/data -l %s/postgres.log -w -t 60 start >/dev/null", pg_bin(),
                 pg->dir, pg->dir) != 0)
        die("pg_ctl start failed");
}

void vt_pg_stop(vt_pg *pg, const char *mode)
{
    vt_pg_sh("%s/pg_ctl -D %s/data -m %s -w -t 60 stop >/dev/null 2>&1", pg_bin(), pg->dir, mode);
}

pid_t vt_pg_postmaster(const vt_pg *pg)
{
    char path[200];
    long pid = 0;
    snprintf(path, sizeof(path), "%s/data/postmaster.pid", pg->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    if (fscanf(f, "%ld", &pid) != 1)
        pid = 0;
    fclose(f);
    return (pid_t)pid;
}

bool vt_pg_ready(const vt_pg *pg)
{
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "%s/pg_isready -q -h 127.0.0.1 -p %d -t 1", pg_bin(), pg->port);
    return system(cmd) == 0;
}

int vt_pg_log_count(const vt_pg *pg, const char *needle)
{
    char path[200], line[4096];
    int n = 0;
    snprintf(path, sizeof(path), "%s/postgres.log", pg->dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

void vt_pg_destroy(vt_pg *pg)
{
    char cmd[200];
    if (!pg->dir[0])
        return;
    vt_pg_stop(pg, "immediate");
    snprintf(cmd, sizeof(cmd), "rm -rf %s", pg->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "vt_pg: could not remove %s\n", pg->dir);
    pg->dir[0] = 0;
}

void vt_pg_use(const vt_pg *pg)
{
    setenv("VERDICT_TEST_DATABASE_URL", pg->url, 1);
}

/* ---- the dropping proxy ---- */

static pthread_mutex_t px_mu = PTHREAD_MUTEX_INITIALIZER;
static char px_marker[128];
static int px_left; /* marker occurrences still to see; 0: not armed */
static bool px_after_commit;
static int px_drops;
static int px_closed; /* connections whose both ends are closed */
static int px_target;

typedef struct px_conn {
    int client, server;
    int state;    /* 0 forwarding, 1 waiting for COMMIT, 2 swallowing until ReadyForQuery */
    bool startup; /* single-byte answers to SSL/GSS requests may come first */
    unsigned char hdr[5];
    int hdr_len;
    uint32_t body_left;
} px_conn;

static int count_in(const char *buf, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    int c = 0;
    for (size_t i = 0; k && i + k <= n; i++)
        c += memcmp(buf + i, needle, k) == 0;
    return c;
}

static void client_data(px_conn *pc, const char *buf, size_t n)
{
    pthread_mutex_lock(&px_mu);
    if (pc->state == 0 && px_left > 0) {
        int seen = count_in(buf, n, px_marker);
        if (seen >= px_left) {
            px_left = 0;
            pc->state = px_after_commit ? 1 : 2;
        } else {
            px_left -= seen;
        }
    }
    if (pc->state == 1 && count_in(buf, n, "COMMIT") > 0)
        pc->state = 2;
    pthread_mutex_unlock(&px_mu);
}

/* Track the server's message boundaries; true when a ReadyForQuery starts in buf while the
 * connection is to be dropped (nothing of buf is forwarded then). */
static bool server_data(px_conn *pc, const unsigned char *buf, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (pc->body_left > 0) {
            size_t take = pc->body_left < n - i ? pc->body_left : n - i;
            pc->body_left -= (uint32_t)take;
            i += take;
            continue;
        }
        if (pc->startup && pc->hdr_len == 0 && (buf[i] == 'N' || buf[i] == 'S')) {
            i++;
            continue;
        }
        pc->startup = false;
        pc->hdr[pc->hdr_len++] = buf[i++];
        if (pc->hdr_len < 5)
            continue;
        if (pc->hdr[0] == 'Z' && pc->state == 2)
            return true;
        pc->body_left = ((uint32_t)pc->hdr[1] << 24 | (uint32_t)pc->hdr[2] << 16 |
                         (uint32_t)pc->hdr[3] << 8 | pc->hdr[4]) -
                        4;
        pc->hdr_len = 0;
    }
    return false;
}

static void *px_pump(void *arg)
{
    px_conn *pc = arg;
    char buf[65536];
    for (;;) {
        struct pollfd p[2] = {{pc->client, POLLIN, 0}, {pc->server, POLLIN, 0}};
        if (poll(p, 2, -1) < 0)
            break;
        if (p[0].revents) {
            ssize_t n = read(pc->client, buf, sizeof(buf));
            if (n <= 0)
                break;
            client_data(pc, buf, (size_t)n);
            if (write(pc->server, buf, (size_t)n) != n)
                break;
        }
        if (p[1].revents) {
            ssize_t n = read(pc->server, buf, sizeof(buf));
            if (n <= 0)
                break;
            if (server_data(pc, (unsigned char *)buf, (size_t)n)) {
                pthread_mutex_lock(&px_mu);
                px_drops++;
                pthread_mutex_unlock(&px_mu);
                break;
            }
            /* once the drop is decided, the client hears nothing more */
            if (pc->state != 2 && write(pc->client, buf, (size_t)n) != n)
                break;
        }
    }
    close(pc->client);
    close(pc->server);
    free(pc);
    pthread_mutex_lock(&px_mu);
    px_closed++;
    pthread_mutex_unlock(&px_mu);
    return NULL;
}

static void *px_accept(void *arg)
{
    int lfd = (int)(intptr_t)arg;
    for (;;) {
        int cfd = accept(lfd, NULL, NULL);
        if (cfd < 0)
            continue;
        int sfd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)px_target)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        px_conn *pc = calloc(1, sizeof(*pc));
        pthread_t t;
        if (!pc || connect(sfd, (struct sockaddr *)&a, sizeof(a)) != 0) {
            close(cfd);
            close(sfd);
            free(pc);
            continue;
        }
        pc->client = cfd;
        pc->server = sfd;
        pc->startup = true;
        if (pthread_create(&t, NULL, px_pump, pc) == 0)
            pthread_detach(t);
    }
    return NULL;
}

int vt_proxy_start(int port)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t len = sizeof(a);
    pthread_t t;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(lfd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(lfd, 64) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &len) != 0)
        die("proxy listen");
    px_target = port;
    if (pthread_create(&t, NULL, px_accept, (void *)(intptr_t)lfd) != 0)
        die("proxy thread");
    pthread_detach(t);
    return ntohs(a.sin_port);
}

void vt_proxy_arm(const char *marker, int nth, bool after_commit)
{
    pthread_mutex_lock(&px_mu);
    snprintf(px_marker, sizeof(px_marker), "%s", marker);
    px_left = nth;
    px_after_commit = after_commit;
    pthread_mutex_unlock(&px_mu);
}

int vt_proxy_drops(void)
{
    pthread_mutex_lock(&px_mu);
    int n = px_drops;
    pthread_mutex_unlock(&px_mu);
    return n;
}

int vt_proxy_closed(void)
{
    pthread_mutex_lock(&px_mu);
    int n = px_closed;
    pthread_mutex_unlock(&px_mu);
    return n;
}
