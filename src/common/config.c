/* config.c - parse and validate verdictd's environment configuration (SPEC §9).
 * Depends only on libc; every failure names the variable it could not accept. Secrets may
 * come from files (VERDICT_API_KEYS_FILE, VERDICT_DATABASE_URL_FILE: the Docker/Kubernetes
 * secrets convention), read here once at start. */
#include "verdict/config.h"
#include "verdict/util.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return false;
}

/* A decimal integer, with vd_parse_i64 like every number from outside. */
static bool parse_long(const char *s, long *out)
{
    int64_t v = 0;
    if (!s || !vd_parse_i64(s, strlen(s), LONG_MIN, LONG_MAX, &v))
        return false;
    *out = (long)v;
    return true;
}

/* An integer variable within [min, max]; `def` when unset. */
static bool env_int(vd_env_getter get, const char *name, long def, long min, long max, int *out,
                    char *err, size_t errlen)
{
    const char *s = get(name);
    long v = def;
    if (s && !parse_long(s, &v))
        return fail(err, errlen, "%s: '%s' is not an integer", name, s);
    if (v < min || v > max)
        return fail(err, errlen, "%s: %ld is out of range %ld..%ld", name, v, min, max);
    *out = (int)v;
    return true;
}

vd_role vd_role_parse(const char *s)
{
    if (!s)
        return VD_ROLE_NONE;
    if (strcmp(s, "reader") == 0)
        return VD_ROLE_READER;
    if (strcmp(s, "worker") == 0)
        return VD_ROLE_WORKER;
    if (strcmp(s, "admin") == 0)
        return VD_ROLE_ADMIN;
    return VD_ROLE_NONE;
}

const char *vd_role_name(vd_role role)
{
    static const char *names[VD_ROLE__MAX] = {"none", "reader", "worker", "admin"};
    if ((int)role < 0 || role >= VD_ROLE__MAX)
        return "none";
    return names[role];
}

static bool is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 ||
           strcmp(host, "localhost") == 0;
}

/* "host:port" or "[v6]:port"; the host defaults to 127.0.0.1 for ":port". */
static bool parse_listen(vd_config *cfg, const char *s, char *err, size_t errlen)
{
    const char *host = s, *colon = NULL;
    size_t hlen = 0;
    long port = 0;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':')
            return fail(err, errlen, "VERDICT_LISTEN: '%s' is not [host]:port", s);
        host = s + 1;
        hlen = (size_t)(close - host);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (!colon)
            return fail(err, errlen, "VERDICT_LISTEN: '%s' is not host:port", s);
        hlen = (size_t)(colon - s);
    }
    if (!parse_long(colon + 1, &port) || port < 1 || port > 65535)
        return fail(err, errlen, "VERDICT_LISTEN: '%s' has no valid port (1..65535)", s);
    if (hlen == 0) {
        host = "127.0.0.1";
        hlen = strlen(host);
    }
    cfg->listen_host = strndup(host, hlen);
    if (!cfg->listen_host)
        return fail(err, errlen, "VERDICT_LISTEN: out of memory");
    if (strcmp(cfg->listen_host, "localhost") == 0) {
        free(cfg->listen_host);
        cfg->listen_host = strdup("127.0.0.1");
        if (!cfg->listen_host)
            return fail(err, errlen, "VERDICT_LISTEN: out of memory");
    }
    cfg->listen_port = (int)port;
    cfg->listen_loopback = is_loopback(cfg->listen_host);
    return true;
}

/* One "name:role:token" entry; the token may itself contain ':'. */
static bool parse_key(vd_api_key *key, const char *entry, size_t len, char *err, size_t errlen)
{
    const char *c1 = memchr(entry, ':', len);
    const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - entry)) : NULL;
    if (!c1 || !c2 || c1 == entry || (size_t)(c2 + 1 - entry) >= len)
        return fail(err, errlen, "VERDICT_API_KEYS: an entry is not name:role:token");
    char role[16] = {0};
    size_t rlen = (size_t)(c2 - c1 - 1);
    if (rlen >= sizeof(role))
        return fail(err, errlen, "VERDICT_API_KEYS: unknown role (reader, worker or admin)");
    memcpy(role, c1 + 1, rlen);
    key->role = vd_role_parse(role);
    if (key->role == VD_ROLE_NONE)
        return fail(err, errlen, "VERDICT_API_KEYS: unknown role '%s' (reader, worker or admin)",
                    role);
    key->name = strndup(entry, (size_t)(c1 - entry));
    key->token = strndup(c2 + 1, len - (size_t)(c2 + 1 - entry));
    if (!key->name || !key->token)
        return fail(err, errlen, "VERDICT_API_KEYS: out of memory");
    if (strlen(key->token) < 8)
        return fail(err, errlen, "VERDICT_API_KEYS: the token of '%s' is shorter than 8 bytes",
                    key->name);
    return true;
}

static bool parse_keys(vd_config *cfg, const char *s, char *err, size_t errlen)
{
    size_t n = 1;
    for (const char *p = s; *p; p++)
        n += (*p == ',');
    cfg->api_keys = calloc(n, sizeof(*cfg->api_keys));
    if (!cfg->api_keys)
        return fail(err, errlen, "VERDICT_API_KEYS: out of memory");
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len > 0) {
            if (!parse_key(&cfg->api_keys[cfg->api_key_count], p, len, err, errlen)) {
                cfg->api_key_count++; /* so cleanup frees the partial entry */
                return false;
            }
            cfg->api_key_count++;
        }
        p += len + (comma ? 1 : 0);
    }
    return true;
}

#define MAX_SECRET_FILE 1048576

/* The content of the file named by variable `var` (malloc'd in *out), trailing whitespace
 * and newlines cut; newlines inside become `sep` (',' joins one API key per line). */
static bool read_secret_file(const char *var, const char *path, char sep, char **out, char *err,
                             size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0;
    *out = NULL;
    if (!f)
        return fail(err, errlen, "%s: cannot read '%s': %s", var, path, strerror(errno));
    buf = malloc(MAX_SECRET_FILE + 1);
    if (buf)
        n = fread(buf, 1, MAX_SECRET_FILE + 1, f);
    fclose(f);
    if (!buf)
        return fail(err, errlen, "%s: out of memory", var);
    if (n > MAX_SECRET_FILE || memchr(buf, '\0', n)) {
        free(buf);
        return fail(err, errlen, "%s: '%s' is not a text file of at most 1 MiB", var, path);
    }
    while (n > 0 &&
           (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t'))
        n--;
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\r' || buf[i] == '\n')
            buf[i] = sep;
    }
    *out = buf;
    return true;
}

/* A secret given either in `var` or in the file named by `var`_FILE, never both. *out is
 * malloc'd (NULL when neither is set or the value is empty). */
static bool env_or_file(vd_env_getter get, const char *var, char sep, char **out, char *err,
                        size_t errlen)
{
    char file_var[64];
    const char *v = get(var), *path = NULL;
    snprintf(file_var, sizeof(file_var), "%s_FILE", var);
    path = get(file_var);
    *out = NULL;
    if (v && *v && path && *path)
        return fail(err, errlen, "%s and %s are both set: set one of them", var, file_var);
    if (path && *path)
        return read_secret_file(file_var, path, sep, out, err, errlen);
    if (!v || !*v)
        return true;
    *out = strdup(v);
    return *out ? true : fail(err, errlen, "%s: out of memory", var);
}

/* VERDICT_TLS_CERT_FILE and VERDICT_TLS_KEY_FILE: both or neither (server.c loads them);
 * VERDICT_TLS_PRIORITY (a GnuTLS priority string) only with them. */
static bool load_tls(vd_config *cfg, vd_env_getter get, char *err, size_t errlen)
{
    const char *cert = get("VERDICT_TLS_CERT_FILE"), *key = get("VERDICT_TLS_KEY_FILE");
    bool has_cert = cert && *cert, has_key = key && *key;
    if (has_cert != has_key)
        return fail(err, errlen, "%s: set together with %s (a certificate needs its key)",
                    has_cert ? "VERDICT_TLS_KEY_FILE" : "VERDICT_TLS_CERT_FILE",
                    has_cert ? "VERDICT_TLS_CERT_FILE" : "VERDICT_TLS_KEY_FILE");
    const char *prio = get("VERDICT_TLS_PRIORITY");
    if (prio && *prio && !has_cert)
        return fail(err, errlen, "VERDICT_TLS_PRIORITY: set without VERDICT_TLS_CERT_FILE");
    if (!has_cert)
        return true;
    cfg->tls_cert_file = strdup(cert);
    cfg->tls_key_file = strdup(key);
    cfg->tls_priority = prio && *prio ? strdup(prio) : NULL;
    if (!cfg->tls_cert_file || !cfg->tls_key_file || (prio && *prio && !cfg->tls_priority))
        return fail(err, errlen, "VERDICT_TLS_CERT_FILE: out of memory");
    return true;
}

static bool parse_log_level(vd_config *cfg, const char *s, char *err, size_t errlen)
{
    static const char *names[VD_LOG__MAX] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < VD_LOG__MAX; i++) {
        if (strcmp(s, names[i]) == 0) {
            cfg->log_level = (vd_log_level)i;
            return true;
        }
    }
    return fail(err, errlen, "VERDICT_LOG_LEVEL: '%s' is not debug, info, warn or error", s);
}

static bool load_numbers(vd_config *cfg, vd_env_getter get, char *err, size_t errlen)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int body = 0;
    if (ncpu < 1)
        ncpu = 1;
    if (ncpu > 256)
        ncpu = 256;
    bool ok =
        env_int(get, "VERDICT_THREADS", ncpu, 1, 256, &cfg->threads, err, errlen) &&
        env_int(get, "VERDICT_LEASE_SECONDS", 300, 5, 86400, &cfg->lease_seconds, err, errlen) &&
        env_int(get, "VERDICT_MAX_ATTEMPTS", 5, 1, 100, &cfg->max_attempts, err, errlen) &&
        env_int(get, "VERDICT_MAX_DEFERS", 3, 1, 100, &cfg->max_defers, err, errlen) &&
        env_int(get, "VERDICT_MAX_RELEASES", 0, 0, 1000, &cfg->max_releases, err, errlen) &&
        env_int(get, "VERDICT_BACKOFF_BASE_SECONDS", 10, 0, 86400, &cfg->backoff_base_seconds, err,
                errlen) &&
        env_int(get, "VERDICT_BACKOFF_CAP_SECONDS", 3600, 0, 604800, &cfg->backoff_cap_seconds, err,
                errlen) &&
        env_int(get, "VERDICT_LOOP_THRESHOLD", 3, 1, 1000, &cfg->loop_threshold, err, errlen) &&
        env_int(get, "VERDICT_SWEEP_INTERVAL_SECONDS", 5, 1, 3600, &cfg->sweep_interval_seconds,
                err, errlen) &&
        env_int(get, "VERDICT_MAX_BODY_BYTES", 1048576, 1024, 64 * 1048576, &body, err, errlen) &&
        env_int(get, "VERDICT_MAX_CONSECUTIVE_RETRIES", 3, 1, 1000, &cfg->max_consecutive_retries,
                err, errlen) &&
        env_int(get, "VERDICT_RETENTION_DAYS", 30, 1, 36500, &cfg->retention_days, err, errlen) &&
        env_int(get, "VERDICT_RETENTION_INTERVAL_SECONDS", 60, 1, 86400,
                &cfg->retention_interval_seconds, err, errlen) &&
        env_int(get, "VERDICT_DB_POOL_SIZE", 0, 0, 512, &cfg->db_pool_size, err, errlen) &&
        env_int(get, "VERDICT_DB_TIMEOUT_MS", 5000, 100, 600000, &cfg->db_timeout_ms, err,
                errlen) &&
        env_int(get, "VERDICT_MAX_CONNECTIONS", 1024, 16, 60000, &cfg->max_connections, err,
                errlen) &&
        env_int(get, "VERDICT_MAX_CONNECTIONS_PER_IP", 128, 0, 60000, &cfg->max_connections_per_ip,
                err, errlen) &&
        env_int(get, "VERDICT_CONNECTION_RESERVE_PERCENT", 25, 0, 90,
                &cfg->connection_reserve_percent, err, errlen) &&
        env_int(get, "VERDICT_READ_TIMEOUT_MS", 10000, 100, 600000, &cfg->read_timeout_ms, err,
                errlen) &&
        env_int(get, "VERDICT_HTTP_IDLE_SECONDS", 0, 0, 3600, &cfg->idle_seconds, err, errlen) &&
        env_int(get, "VERDICT_QUEUE_DEPTH", 0, 0, 100000, &cfg->queue_depth, err, errlen) &&
        env_int(get, "VERDICT_MAX_WAITERS", 1000, 0, 100000, &cfg->max_waiters, err, errlen) &&
        env_int(get, "VERDICT_WAIT_RETRY_MS", 1000, 100, 60000, &cfg->wait_retry_ms, err, errlen) &&
        env_int(get, "VERDICT_COALESCE_RUNNERS", -1, -1, 64, &cfg->coalesce_runners, err, errlen) &&
        env_int(get, "VERDICT_DB_ASYNC_CONNECTIONS", 8, 0, 64, &cfg->db_async_connections, err,
                errlen);
    if (ok)
        cfg->max_body_bytes = (size_t)body;
    return ok;
}

/* VERDICT_HTTP_IDLE_SECONDS: 0 (unset) is 30 s, or one second past the read deadline when
 * that is longer; a value set must be longer than the read deadline (an idle keep-alive
 * connection that may send a request must be given the time to send it). */
static bool idle_limit(vd_config *cfg, char *err, size_t errlen)
{
    int read_s = (cfg->read_timeout_ms + 999) / 1000;
    if (cfg->idle_seconds == 0) {
        cfg->idle_seconds = read_s + 1 > 30 ? read_s + 1 : 30;
        return true;
    }
    if ((long)cfg->idle_seconds * 1000 <= cfg->read_timeout_ms)
        return fail(err, errlen,
                    "VERDICT_HTTP_IDLE_SECONDS: %d s is not longer than VERDICT_READ_TIMEOUT_MS "
                    "(%d ms)",
                    cfg->idle_seconds, cfg->read_timeout_ms);
    return true;
}

bool vd_config_load(vd_config *cfg, vd_env_getter get, char *err, size_t errlen)
{
    const char *s = NULL;
    char *keys = NULL;
    int automig = 1;
    memset(cfg, 0, sizeof(*cfg));
    cfg->log_level = VD_LOG_INFO;
    if (!load_numbers(cfg, get, err, errlen))
        goto bad;
    if (cfg->backoff_cap_seconds < cfg->backoff_base_seconds) {
        fail(err, errlen, "VERDICT_BACKOFF_CAP_SECONDS: smaller than VERDICT_BACKOFF_BASE_SECONDS");
        goto bad;
    }
    if (!env_int(get, "VERDICT_AUTO_MIGRATE", 1, 0, 1, &automig, err, errlen))
        goto bad;
    cfg->auto_migrate = automig == 1;
    s = get("VERDICT_DB_POOL_MODE");
    if (s && *s && strcmp(s, "session") != 0 && strcmp(s, "transaction") != 0) {
        fail(err, errlen, "VERDICT_DB_POOL_MODE: '%s' is not session or transaction", s);
        goto bad;
    }
    cfg->db_pool_transaction = s && strcmp(s, "transaction") == 0;
    cfg->db_pool_forced = s && *s;
    if (cfg->coalesce_runners < 0) /* one per worker thread for claims, one for dispositions */
        cfg->coalesce_runners = cfg->threads;
    if (cfg->db_pool_size == 0)
        cfg->db_pool_size = cfg->threads + 1 + 2 * cfg->coalesce_runners;
    if (cfg->queue_depth == 0)
        cfg->queue_depth = 64 * cfg->threads;
    if (!idle_limit(cfg, err, errlen))
        goto bad;
    if (!env_or_file(get, "VERDICT_DATABASE_URL", ' ', &cfg->database_url, err, errlen))
        goto bad;
    s = get("VERDICT_LISTEN");
    if (!parse_listen(cfg, s && *s ? s : "127.0.0.1:8080", err, errlen))
        goto bad;
    if (!env_or_file(get, "VERDICT_API_KEYS", ',', &keys, err, errlen) ||
        (keys && *keys && !parse_keys(cfg, keys, err, errlen)) || !load_tls(cfg, get, err, errlen))
        goto bad;
    s = get("VERDICT_LOG_LEVEL");
    if (s && *s && !parse_log_level(cfg, s, err, errlen))
        goto bad;
    s = get("VERDICT_OTLP_ENDPOINT");
    if (s && *s && (strncmp(s, "http://", 7) != 0 || strlen(s) > 500)) {
        fail(err, errlen, "VERDICT_OTLP_ENDPOINT: must be an http:// URL of at most 500 bytes");
        goto bad;
    }
    cfg->otlp_endpoint = s && *s ? strdup(s) : NULL;
    if (s && *s && !cfg->otlp_endpoint)
        goto bad;
    if (cfg->api_key_count == 0 && !cfg->listen_loopback) {
        fail(err, errlen,
             "VERDICT_API_KEYS: required when VERDICT_LISTEN (%s) is not a loopback address",
             cfg->listen_host);
        goto bad;
    }
    free(keys);
    return true;
bad:
    free(keys);
    vd_config_cleanup(cfg);
    return false;
}

void vd_config_cleanup(vd_config *cfg)
{
    for (size_t i = 0; i < cfg->api_key_count; i++) {
        free(cfg->api_keys[i].name);
        free(cfg->api_keys[i].token);
    }
    free(cfg->api_keys);
    free(cfg->database_url);
    free(cfg->listen_host);
    free(cfg->tls_cert_file);
    free(cfg->tls_key_file);
    free(cfg->tls_priority);
    free(cfg->otlp_endpoint);
    memset(cfg, 0, sizeof(*cfg));
}
