/* env.c - what a benchmark run stands on: its own database (created through the admin URL,
 * dropped at the end), a child verdictd on a free loopback port with an admin API key, and
 * the /proc readers for CPU time and RSS. Talks to PostgreSQL with libpq directly (setup
 * only; the measured SQL path goes through verdict's store API in cell.c).
 */
#include "bench.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "verdict/util.h"

extern char **environ;

/* ---- database ------------------------------------------------------------------------ */

/* Append key='value' (libpq quoting) to out. */
static void append_kv(char *out, size_t cap, const char *key, const char *val)
{
    size_t n = strlen(out);
    n += (size_t)snprintf(out + n, n < cap ? cap - n : 0, "%s%s='", n ? " " : "", key);
    for (const char *p = val; *p && n + 3 < cap; p++) {
        if (*p == '\'' || *p == '\\')
            out[n++] = '\\';
        out[n++] = *p;
    }
    if (n + 2 < cap) {
        out[n++] = '\'';
        out[n] = '\0';
    }
}

/* The admin URL with dbname replaced, as a keyword string (works for URIs too). */
static bool url_with_db(const char *url, const char *db, char *out, size_t cap)
{
    char *err = NULL;
    PQconninfoOption *opts = PQconninfoParse(url, &err);
    if (!opts) {
        fprintf(stderr, "verdict-bench: --database-url: %s\n", err ? err : "cannot parse");
        PQfreemem(err);
        return false;
    }
    out[0] = '\0';
    for (PQconninfoOption *o = opts; o->keyword; o++) {
        if (strcmp(o->keyword, "dbname") == 0 || !o->val || !*o->val)
            continue;
        append_kv(out, cap, o->keyword, o->val);
    }
    append_kv(out, cap, "dbname", db);
    PQconninfoFree(opts);
    return true;
}

static bool exec_on(const char *url, const char *sql, bool quiet)
{
    PGconn *c = PQconnectdb(url);
    PGresult *r = NULL;
    bool ok = false;
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "verdict-bench: connect: %s", PQerrorMessage(c));
        goto out;
    }
    r = PQexec(c, sql);
    ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok && !quiet)
        fprintf(stderr, "verdict-bench: %.120s: %s", sql, PQerrorMessage(c));
out:
    PQclear(r);
    PQfinish(c);
    return ok;
}

bool vb_env_db_create(vb_env *e, const vb_options *o)
{
    char sql[128];
    snprintf(e->db_name, sizeof(e->db_name), "verdict_bench_%d", (int)getpid());
    snprintf(e->admin_url, sizeof(e->admin_url), "%s", o->database_url);
    snprintf(e->child_db, sizeof(e->child_db), "%s", o->verdictd_db ? o->verdictd_db : "");
    if (!url_with_db(o->database_url, e->db_name, e->db_url, sizeof(e->db_url)))
        return false;
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", e->db_name);
    exec_on(e->admin_url, sql, true);
    snprintf(sql, sizeof(sql), "CREATE DATABASE %s", e->db_name);
    if (!exec_on(e->admin_url, sql, false))
        return false;
    e->db_created = true;
    return true;
}

void vb_env_db_drop(vb_env *e)
{
    char sql[128];
    if (!e->db_created)
        return;
    snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", e->db_name);
    if (exec_on(e->admin_url, sql, false))
        e->db_created = false;
}

bool vb_env_sql(const vb_env *e, const char *sql)
{
    return exec_on(e->db_url, sql, false);
}

long vb_env_sql_long(const vb_env *e, const char *sql)
{
    PGconn *c = PQconnectdb(e->db_url);
    PGresult *r = NULL;
    long v = -1;
    if (PQstatus(c) != CONNECTION_OK)
        goto out;
    r = PQexec(c, sql);
    if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
        v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
    else
        fprintf(stderr, "verdict-bench: %.120s: %s", sql, PQerrorMessage(c));
out:
    PQclear(r);
    PQfinish(c);
    return v;
}

/* ---- the child verdictd --------------------------------------------------------------- */

int vb_free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int port = -1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

/* What verdictd inherits from the bench's environment: everything but VERDICT_*, except the
 * pool mode and the executor's connections (an A/B of VERDICT_DB_ASYNC_CONNECTIONS). */
static bool inherited(const char *kv)
{
    return strncmp(kv, "VERDICT_", 8) != 0 || strncmp(kv, "VERDICT_DB_POOL_MODE=", 21) == 0 ||
           strncmp(kv, "VERDICT_DB_ASYNC_CONNECTIONS=", 29) == 0;
}

/* The parent's environment without VERDICT_* plus ours; NULL-terminated, malloc'd. */
static char **child_env(const vb_env *e)
{
    size_t n = 0, k = 0;
    char **env = NULL;
    while (environ[n])
        n++;
    env = calloc(n + 5, sizeof(*env));
    if (!env)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (inherited(environ[i]))
            env[k++] = environ[i];
    env[k++] = e->child_db[0]
                   ? vb_strdupf("VERDICT_DATABASE_URL=%s dbname=%s", e->child_db, e->db_name)
                   : vb_strdupf("VERDICT_DATABASE_URL=%s", e->db_url);
    env[k++] = vb_strdupf("VERDICT_LISTEN=127.0.0.1:%d", e->port);
    env[k++] = vb_strdupf("VERDICT_API_KEYS=%s:admin:%s", VB_ACTOR, e->token);
    env[k++] = vb_strdupf("VERDICT_THREADS=%d", e->threads);
    env[k] = NULL;
    for (size_t i = k - 4; i < k; i++) {
        if (!env[i]) { /* out of memory: free what was made, fail */
            for (size_t j = k - 4; j < k; j++)
                free(env[j]);
            free(env);
            return NULL;
        }
    }
    return env;
}

static bool wait_ready(vb_env *e)
{
    double deadline = vb_now() + 60;
    vb_http h;
    int st = 0;
    while (vb_now() < deadline) {
        if (waitpid(e->pid, &st, WNOHANG) == e->pid) {
            fprintf(stderr,
                    "verdict-bench: verdictd exited during start-up (status %d); "
                    "rerun with --verdictd-log FILE to see why\n",
                    st);
            e->pid = 0;
            return false;
        }
        if (vb_http_open(&h, e->port, NULL)) {
            int status = vb_http_request(&h, "GET", "/readyz", NULL, 0);
            vb_http_close(&h);
            if (status == 200)
                return true;
        }
        vb_sleep(0.1);
    }
    fprintf(stderr, "verdict-bench: verdictd not ready after 60 s\n");
    return false;
}

bool vb_env_server_start(vb_env *e, const vb_options *o)
{
    char **env = NULL;
    char *const argv[] = {(char *)o->verdictd, (char *)"serve", NULL};
    bool ok = false;
    vd_random_hex(e->token, 16);
    e->threads = o->threads;
    /* VERDICT_DB_POOL_SIZE's default, left alone: threads + 1 + 2 x VERDICT_COALESCE_RUNNERS
     * (default threads; a verdictd built before coalescing opens threads + 1) */
    e->db_pool = 3 * o->threads + 1;
    e->port = vb_free_port();
    if (e->port <= 0 || access(o->verdictd, X_OK) != 0) {
        fprintf(stderr, "verdict-bench: %s: %s\n", o->verdictd,
                e->port <= 0 ? "no free port" : strerror(errno));
        return false;
    }
    if (!(env = child_env(e)))
        return false;
    e->pid = fork();
    if (e->pid == 0) {
        int fd = open(o->verdictd_log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* never outlive the bench */
        setpgid(0, 0);                    /* a terminal's ^C reaches the bench only */
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execve(o->verdictd, argv, env);
        _exit(127);
    }
    if (e->pid < 0) {
        e->pid = 0;
        goto out;
    }
    ok = wait_ready(e);
    if (ok)
        e->rss_idle_kb = vb_proc_rss_kb(e->pid);
out:
    /* the four strings child_env added sit after the inherited ones */
    for (char **p = env; *p; p++)
        if (!inherited(*p))
            free(*p);
    free(env);
    return ok;
}

void vb_env_server_stop(vb_env *e)
{
    int st = 0;
    double deadline = vb_now() + 10;
    if (e->pid <= 0)
        return;
    kill(e->pid, SIGTERM);
    while (waitpid(e->pid, &st, WNOHANG) == 0) {
        if (vb_now() > deadline) {
            kill(e->pid, SIGKILL);
            waitpid(e->pid, &st, 0);
            break;
        }
        vb_sleep(0.02);
    }
    e->pid = 0;
}

/* ---- /proc ---------------------------------------------------------------------------- */

static long clk_tck(void)
{
    static long tck;
    if (!tck)
        tck = sysconf(_SC_CLK_TCK);
    return tck > 0 ? tck : 100;
}

/* Fields of /proc/<path>/stat: utime+stime (and, with children, cutime+cstime: the CPU of
 * children it has waited for) in ticks, and the parent's pid. -1 when unreadable. */
static long long stat_ticks(const char *path, bool children, long *ppid)
{
    char buf[1024];
    unsigned long long ut = 0, st = 0, cut = 0, cst = 0;
    long pp = 0;
    FILE *f = fopen(path, "r");
    size_t n;
    char *close_paren;
    if (!f)
        return -1;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    close_paren = strrchr(buf, ')');
    /* after "comm)": state(3) ppid(4) pgrp session tty tpgid flags minflt cminflt majflt
     * cmajflt utime(14) stime(15) cutime(16) cstime(17) */
    if (!close_paren || sscanf(close_paren + 2,
                               "%*c %ld %*d %*d %*d %*d %*u %*u %*u %*u %*u "
                               "%llu %llu %llu %llu",
                               &pp, &ut, &st, &cut, &cst) != 5)
        return -1;
    if (ppid)
        *ppid = pp;
    return (long long)(ut + st + (children ? cut + cst : 0));
}

double vb_proc_cpu_seconds(pid_t pid)
{
    char path[64];
    long long t;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    t = stat_ticks(path, false, NULL);
    return t < 0 ? -1 : (double)t / (double)clk_tck();
}

long vb_proc_rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (!(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtol(line + 6, NULL, 10);
            break;
        }
    fclose(f);
    return kb;
}

double vb_postgres_cpu_seconds(pid_t postmaster)
{
    DIR *d = NULL;
    struct dirent *de;
    char path[300];
    long long sum;
    if (postmaster <= 0)
        return 0;
    /* the postmaster with the children it reaped (backends and autovacuum workers that
     * ended), plus every live child: a delta of this is the server's CPU, whoever ran */
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)postmaster);
    if ((sum = stat_ticks(path, true, NULL)) < 0 || !(d = opendir("/proc")))
        return 0;
    while ((de = readdir(d))) {
        long ppid = 0;
        long long t;
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        t = stat_ticks(path, false, &ppid);
        if (t > 0 && ppid == (long)postmaster)
            sum += t;
    }
    closedir(d);
    return (double)sum / (double)clk_tck();
}

pid_t vb_postmaster_pid(const vb_env *e)
{
    char path[64], line[256];
    long backend = vb_env_sql_long(e, "SELECT pg_backend_pid()"), ppid = -1;
    FILE *f;
    /* a backend's parent is the postmaster; on another host there is none to read */
    snprintf(path, sizeof(path), "/proc/%ld/status", backend);
    if (backend <= 0 || !(f = fopen(path, "r")))
        return 0;
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, "PPid:", 5) == 0)
            ppid = strtol(line + 5, NULL, 10);
    fclose(f);
    return ppid > 1 ? (pid_t)ppid : 0;
}

bool vb_host_cpu(double *busy, double *total)
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    int n;
    if (!f)
        return false;
    n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
               &v[5], &v[6], &v[7]);
    fclose(f);
    if (n < 4)
        return false;
    *total = 0;
    for (int i = 0; i < 8; i++)
        *total += (double)v[i];
    *busy = *total - (double)v[3] - (double)v[4]; /* minus idle and iowait */
    return true;
}

double vb_self_cpu_seconds(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return -1;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}
