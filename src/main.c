/* main.c - verdictd: `serve` (default), `migrate`, `version`, `--help`. Reads the
 * configuration from the environment, applies migrations, serves until SIGTERM/SIGINT, then
 * stops accepting, finishes in-flight requests and exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <time.h>

#include "verdict/classify.h"
#include "verdict/config.h"
#include "verdict/server.h"
#include "verdict/store.h"
#include "verdict/sweeper.h"
#include "verdict/util.h"

static const char usage[] =
    "usage: verdictd [serve|migrate|classify|version] [--help] [--version|-V]\n"
    "\n"
    "  serve     apply pending migrations (unless VERDICT_AUTO_MIGRATE=0) and serve HTTP\n"
    "  migrate   apply pending migrations and exit\n"
    "  classify  read {\"tool\",\"error\",\"kind\"?} JSON lines on stdin, write how the server\n"
    "            classifies each (class, template_id, template, why); needs no database\n"
    "  version   print the version and exit (also --version, -V)\n"
    "\n"
    "Configuration comes from the environment: VERDICT_DATABASE_URL (required),\n"
    "VERDICT_LISTEN (127.0.0.1:8080), VERDICT_THREADS, VERDICT_API_KEYS (name:role:token,...),\n"
    "VERDICT_LEASE_SECONDS, VERDICT_MAX_ATTEMPTS, VERDICT_MAX_DEFERS, "
    "VERDICT_BACKOFF_BASE_SECONDS,\n"
    "VERDICT_BACKOFF_CAP_SECONDS, VERDICT_LOOP_THRESHOLD, VERDICT_SWEEP_INTERVAL_SECONDS,\n"
    "VERDICT_MAX_BODY_BYTES, VERDICT_LOG_LEVEL, VERDICT_AUTO_MIGRATE, VERDICT_RETENTION_DAYS,\n"
    "VERDICT_OTLP_ENDPOINT (http://host:port[/path]: export one span per request as OTLP JSON).\n"
    "See README.md.\n";

static const char *env_get(const char *name)
{
    return getenv(name);
}

/* Migrate, retrying for a while: a container often starts before its database. */
static int run_migrate(const vd_config *cfg, int tries)
{
    char err[512] = "";
    int applied = 0;
    for (int i = 0; i < tries; i++) {
        if (vd_store_migrate(cfg->database_url, &applied, err, sizeof(err)) == VD_OK) {
            vd_logf(VD_LOG_INFO, "schema at version %d (%d applied)", vd_store_latest_version(),
                    applied);
            return 0;
        }
        vd_logf(VD_LOG_WARN, "migrate: %s", err);
        if (i + 1 < tries) {
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
    }
    return 1;
}

static int run_serve(const vd_config *cfg)
{
    sigset_t set;
    int sig = 0;
    vd_db *db = NULL;
    vd_server *srv = NULL;
    vd_sweeper *sweeper = NULL;
    int rc = 1;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL); /* every thread started below inherits it */
    signal(SIGPIPE, SIG_IGN);
    if (cfg->auto_migrate && run_migrate(cfg, 30) != 0)
        return 1;
    db = vd_db_create(cfg->database_url, cfg->db_pool_size);
    if (!db)
        goto out;
    vd_db_set_timeout(db, cfg->db_timeout_ms);
    vd_db_set_pool_mode(db, cfg->db_pool_transaction, cfg->db_pool_forced);
    srv = vd_server_start(cfg, db);
    if (!srv)
        goto out;
    sweeper = vd_sweeper_start(cfg, db);
    vd_logf(VD_LOG_INFO, "verdictd %s listening on %s:%d (%d threads, %zu api keys)",
            VERDICT_VERSION, cfg->listen_host, cfg->listen_port, cfg->threads, cfg->api_key_count);
    sigwait(&set, &sig);
    vd_logf(VD_LOG_INFO, "signal %d: draining", sig);
    rc = 0;
out:
    vd_server_stop(srv);
    vd_sweeper_stop(sweeper);
    vd_db_destroy(db);
    if (rc == 0)
        vd_logf(VD_LOG_INFO, "stopped");
    return rc;
}

int main(int argc, char **argv)
{
    const char *cmd = "serve";
    char err[512] = "";
    vd_config cfg;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            printf("verdictd %s\n", VERDICT_VERSION);
            return 0;
        }
    }
    if (argc > 2 ||
        (argc == 2 && strcmp(argv[1], "serve") != 0 && strcmp(argv[1], "migrate") != 0 &&
         strcmp(argv[1], "version") != 0 && strcmp(argv[1], "classify") != 0)) {
        fputs(usage, stderr);
        return 2;
    }
    if (argc == 2)
        cmd = argv[1];
    if (strcmp(cmd, "classify") == 0)
        return vd_classify_run(stdin, stdout);
    if (strcmp(cmd, "version") == 0) {
        printf("verdictd %s\n", VERDICT_VERSION);
        return 0;
    }
    if (!vd_config_load(&cfg, env_get, err, sizeof(err))) {
        fprintf(stderr, "verdictd: configuration: %s\n", err);
        return 2;
    }
    vd_log_set_level(cfg.log_level);
    if (!cfg.database_url) {
        fprintf(stderr, "verdictd: configuration: VERDICT_DATABASE_URL is required\n");
        vd_config_cleanup(&cfg);
        return 2;
    }
    rc = strcmp(cmd, "migrate") == 0 ? run_migrate(&cfg, 1) : run_serve(&cfg);
    vd_config_cleanup(&cfg);
    return rc;
}
