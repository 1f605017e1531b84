/* config.h - verdictd's configuration, read from the environment (SPEC §9).
 *
 * vd_config_load validates every variable up front so a bad value stops the process at
 * start with a message naming the variable. No I/O besides the injected getter and the
 * secret files it names (VERDICT_API_KEYS_FILE, VERDICT_DATABASE_URL_FILE).
 */
#ifndef VERDICT_CONFIG_H
#define VERDICT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict/error.h"

typedef enum vd_role {
    VD_ROLE_NONE = 0,
    VD_ROLE_READER,
    VD_ROLE_WORKER,
    VD_ROLE_ADMIN,
    VD_ROLE__MAX
} vd_role;

typedef enum vd_log_level {
    VD_LOG_DEBUG = 0,
    VD_LOG_INFO,
    VD_LOG_WARN,
    VD_LOG_ERROR,
    VD_LOG__MAX
} vd_log_level;

typedef struct vd_api_key {
    char *name;
    char *token;
    vd_role role;
} vd_api_key;

typedef struct vd_config {
    char *database_url; /* NULL when unset (from VERDICT_DATABASE_URL or ..._FILE) */
    char *listen_host;  /* e.g. "127.0.0.1", "::1", "0.0.0.0" */
    int listen_port;
    bool listen_loopback; /* the host is a loopback address */
    int threads;
    vd_api_key *api_keys;
    size_t api_key_count;
    int lease_seconds;
    int max_attempts;
    int max_defers;
    int max_releases; /* holder releases before manual_review (churn); 0: 2 x max_defers */
    int backoff_base_seconds;
    int backoff_cap_seconds;
    int loop_threshold;
    int sweep_interval_seconds;
    size_t max_body_bytes;
    vd_log_level log_level;
    bool auto_migrate;
    int max_consecutive_retries;
    int retention_days;
    int retention_interval_seconds; /* a retention pass at most this often, unless behind */
    int db_pool_size;
    int db_timeout_ms;        /* client-side bound of every database wait */
    bool db_pool_transaction; /* VERDICT_DB_POOL_MODE=transaction: no session state */
    bool db_pool_forced;      /* VERDICT_DB_POOL_MODE was set: no detection of a pooler */
    int max_connections;      /* libmicrohttpd's global connection cap */
    int max_connections_per_ip;
    int connection_reserve_percent; /* of max_connections, kept from connections with no
                                       request answered yet */
    int read_timeout_ms;            /* a request's headers and body must arrive within this */
    int idle_seconds;    /* a kept-alive connection may wait this long for its next request */
    int queue_depth;     /* requests waiting for a worker before 503 */
    int max_waiters;     /* long-poll claims parked at once; beyond, answered at once */
    int wait_retry_ms;   /* every parked claim is tried again at least this often */
    char *tls_cert_file; /* PEM certificate chain; NULL: plain HTTP */
    char *tls_key_file;  /* its PEM private key; set exactly when tls_cert_file is */
    char *tls_priority;  /* VERDICT_TLS_PRIORITY (GnuTLS priority string); NULL: the default */
    char *otlp_endpoint; /* VERDICT_OTLP_ENDPOINT: http://host:port[/path]; NULL: no export */
    /* threads per coalescer (claims, dispositions; coalesce.h); 0: no coalescing */
    int coalesce_runners;
    /* connections of the non-blocking executor (store/async.h) that runs whole-transaction
     * batch claims without a worker thread; 0: off (also off in transaction pool mode) */
    int db_async_connections;
} vd_config;

/* Returns the value of an environment variable or NULL; getenv fits. */
typedef const char *(*vd_env_getter)(const char *name);

/* Fill *cfg from the environment seen through `get`. On failure returns false, writes a
 * message naming the variable into err (errlen bytes) and leaves *cfg cleaned up. On success
 * the caller owns *cfg and releases it with vd_config_cleanup. */
VD_MUST_USE bool vd_config_load(vd_config *cfg, vd_env_getter get, char *err, size_t errlen);

/* Free what vd_config_load allocated; safe on a zeroed or cleaned config. */
void vd_config_cleanup(vd_config *cfg);

/* "reader"/"worker"/"admin" -> role; VD_ROLE_NONE for anything else. */
vd_role vd_role_parse(const char *s);
const char *vd_role_name(vd_role role);

#endif
