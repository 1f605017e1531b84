/* http.c - a lean HTTP/1.1 client for one persistent loopback connection: one write per
 * request, then the status line, the headers (Content-Length, chunked, Connection: close)
 * and the body. Just enough for verdictd's answers, so that the load generator's own CPU
 * stays small on a 2-core machine. Depends on libc and POSIX sockets only.
 */
#include "bench.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

static bool connect_fd(vb_http *h)
{
    struct sockaddr_in sa;
    int one = 1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)h->port);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return false;
    }
    /* request/response on one connection: Nagle would add 40 ms delayed-ACK stalls */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    h->fd = fd;
    return true;
}

static void reset(vb_http *h)
{
    if (h->fd >= 0)
        close(h->fd);
    h->fd = -1;
    h->in_len = 0;
}

bool vb_http_open(vb_http *h, int port, const char *token)
{
    memset(h, 0, sizeof(*h));
    h->fd = -1;
    h->port = port;
    if (token)
        snprintf(h->auth, sizeof(h->auth), "Authorization: Bearer %s\r\n", token);
    h->in_cap = 64 * 1024;
    h->in = malloc(h->in_cap);
    h->out_cap = 4096;
    h->out = malloc(h->out_cap);
    if (!h->in || !h->out || !connect_fd(h)) {
        vb_http_close(h);
        return false;
    }
    return true;
}

void vb_http_close(vb_http *h)
{
    if (h->fd >= 0)
        close(h->fd);
    free(h->in);
    free(h->out);
    h->fd = -1;
    h->in = h->out = NULL;
    h->in_cap = h->out_cap = 0;
}

static bool send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* Read more bytes into h->in; false on EOF or error. */
static bool fill(vb_http *h)
{
    ssize_t r;
    if (h->in_len + 1 >= h->in_cap) {
        size_t cap = h->in_cap * 2;
        char *in = realloc(h->in, cap);
        if (!in)
            return false;
        h->in = in;
        h->in_cap = cap;
    }
    do {
        r = recv(h->fd, h->in + h->in_len, h->in_cap - h->in_len - 1, 0);
    } while (r < 0 && errno == EINTR);
    if (r <= 0)
        return false;
    h->in_len += (size_t)r;
    h->in[h->in_len] = '\0';
    return true;
}

/* The value of header `name` within [hdr, end), or NULL. */
static const char *header(const char *hdr, const char *end, const char *name, size_t *len)
{
    size_t nl = strlen(name);
    const char *p = strstr(hdr, "\r\n");
    while (p && p + 2 < end) {
        const char *line = p + 2, *eol = strstr(line, "\r\n");
        if (!eol || eol > end)
            break;
        if ((size_t)(eol - line) > nl && line[nl] == ':' && strncasecmp(line, name, nl) == 0) {
            const char *v = line + nl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            *len = (size_t)(eol - v);
            return v;
        }
        p = eol;
    }
    return NULL;
}

/* Decode a chunked body in place starting at in[start]; reads more as needed. */
static bool read_chunked(vb_http *h, size_t start)
{
    size_t rd = start, wr = start;
    for (;;) {
        char *eol, *endp = NULL;
        unsigned long n;
        while (!(eol = strstr(h->in + rd, "\r\n")))
            if (!fill(h))
                return false;
        n = strtoul(h->in + rd, &endp, 16);
        rd = (size_t)(eol - h->in) + 2;
        while (h->in_len < rd + n + 2)
            if (!fill(h))
                return false;
        memmove(h->in + wr, h->in + rd, n);
        wr += n;
        rd += n + 2;
        if (n == 0)
            break;
    }
    /* a trailer section is not expected from verdictd; the final CRLF was consumed above */
    h->in[wr] = '\0';
    h->body = h->in + start;
    h->body_len = wr - start;
    h->in_len = 0;
    return true;
}

static int read_response(vb_http *h)
{
    char *hdr_end = NULL;
    const char *v = NULL;
    size_t vlen = 0, hlen, clen = 0;
    int status = 0;
    bool close_after = false;
    h->in_len = 0;
    while (!(hdr_end = h->in_len ? strstr(h->in, "\r\n\r\n") : NULL))
        if (!fill(h))
            return -1;
    if (sscanf(h->in, "HTTP/1.%*d %d", &status) != 1)
        return -1;
    hlen = (size_t)(hdr_end - h->in) + 4;
    v = header(h->in, hdr_end + 2, "Connection", &vlen);
    close_after = v && vlen >= 5 && strncasecmp(v, "close", 5) == 0;
    v = header(h->in, hdr_end + 2, "Transfer-Encoding", &vlen);
    if (v && vlen >= 7 && strncasecmp(v, "chunked", 7) == 0) {
        if (!read_chunked(h, hlen))
            return -1;
    } else {
        v = header(h->in, hdr_end + 2, "Content-Length", &vlen);
        clen = v ? strtoul(v, NULL, 10) : 0;
        while (h->in_len < hlen + clen)
            if (!fill(h))
                return -1;
        h->body = h->in + hlen;
        h->body_len = clen;
        h->body[clen] = '\0'; /* nothing follows: requests are not pipelined */
    }
    if (close_after)
        reset(h);
    return status;
}

int vb_http_request(vb_http *h, const char *method, const char *path, const char *body,
                    size_t body_len)
{
    int n, status;
    size_t need;
    if (!h->in)
        return -1;
    if (h->fd < 0) {
        if (!connect_fd(h))
            return -1;
        h->reconnects++;
    }
    n = snprintf(h->out, h->out_cap, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%s%s%s%zu\r\n\r\n",
                 method, path, h->port, h->auth, h->extra,
                 body ? "Content-Type: application/json\r\nContent-Length: " : "Content-Length: ",
                 body ? body_len : 0);
    if (n < 0)
        return -1;
    need = (size_t)n + (body ? body_len : 0) + 1;
    if (need > h->out_cap) {
        char *out = realloc(h->out, need);
        if (!out)
            return -1;
        h->out = out;
        h->out_cap = need;
        return vb_http_request(h, method, path, body, body_len);
    }
    h->extra[0] = '\0'; /* for this request only */
    if (body)
        memcpy(h->out + n, body, body_len);
    if (!send_all(h->fd, h->out, (size_t)n + (body ? body_len : 0))) {
        reset(h);
        return -1;
    }
    status = read_response(h);
    if (status < 0)
        reset(h);
    return status;
}
