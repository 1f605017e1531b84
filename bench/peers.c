/* peers.c - the queues people would pick instead, in the same run: pg-boss and
 * graphile-worker from npm (bench/peers/package.json, installed with `npm ci` into the build
 * folder on first use), each driven by its harness (pgboss.mjs, graphile.mjs) in node. The
 * harness prints "measure" when its window opens and "stop" when it closes; the bench takes
 * the same CPU, WAL, commit and statement snapshots there as for its own cells, answers on
 * the harness's stdin (only then does it clean up), and reads its result line (jobs
 * finished, verified against the queue's own tables).
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern volatile int vb_interrupted;

bool vb_peers_install(const vb_options *o)
{
    char probe[600];
    int st = 0;
    pid_t pid;
    snprintf(probe, sizeof(probe), "%s/node_modules/graphile-worker/package.json", o->peers_dir);
    if (access(probe, F_OK) == 0) {
        snprintf(probe, sizeof(probe), "%s/node_modules/pg-boss/package.json", o->peers_dir);
        if (access(probe, F_OK) == 0)
            return true;
    }
    vb_log("npm ci in %s (pg-boss, graphile-worker; once)", o->peers_dir);
    pid = fork();
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (chdir(o->peers_dir) != 0)
            _exit(126);
        if (fd >= 0)
            dup2(fd, STDOUT_FILENO);
        execlp("npm", "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error", (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr,
                "verdict-bench: npm ci in %s failed (node and npm needed for the peers; "
                "--no-peers runs without them)\n",
                o->peers_dir);
        return false;
    }
    return true;
}

/* Jobs each peer must have queued: three times what its fastest cell so far would finish,
 * at least a floor (a batched graphile-worker finishes tens of thousands a second). */
static long peer_stock(const vb_env *e, const vb_options *o, vb_mode m, bool batched)
{
    double floor = batched ? (m == VB_MODE_GRAPHILE ? 30000 : 8000) : 3000;
    double peak = e->peer_peak[m] > floor ? e->peer_peak[m] : floor;
    double need = peak * (o->warmup + o->duration) * 3;
    return need > (double)o->items ? (long)need : o->items;
}

static pid_t spawn_harness(const vb_env *e, const vb_options *o, vb_scenario s, vb_mode m,
                           int clients, int *out_fd, int *ack_fd)
{
    char script[600], cl[16], batch[16], warm[32], dur[32], stock[32], tag[48];
    int fds[2], in[2];
    pid_t pid;
    bool batched = s == VB_SCENARIO_BATCH_CALL;
    snprintf(script, sizeof(script), "%s/%s", o->peers_dir,
             m == VB_MODE_PGBOSS ? "pgboss.mjs" : "graphile.mjs");
    snprintf(cl, sizeof(cl), "%d", clients);
    snprintf(batch, sizeof(batch), "%d", batched ? VB_MAX_BATCH : 1);
    snprintf(warm, sizeof(warm), "%g", o->warmup);
    snprintf(dur, sizeof(dur), "%g", o->duration);
    snprintf(stock, sizeof(stock), "%ld", peer_stock(e, o, m, batched));
    snprintf(tag, sizeof(tag), "%s_%d_%d", vb_scenario_name(s), clients, e->cells_run);
    if (pipe(fds) != 0)
        return -1;
    if (pipe(in) != 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        char *const argv[] = {(char *)"node",
                              script,
                              (char *)"--url",
                              (char *)e->db_url,
                              (char *)"--clients",
                              cl,
                              (char *)"--batch",
                              batch,
                              (char *)"--warmup",
                              warm,
                              (char *)"--duration",
                              dur,
                              (char *)"--stock",
                              stock,
                              (char *)"--tag",
                              tag,
                              NULL};
        dup2(fds[1], STDOUT_FILENO);
        dup2(in[0], STDIN_FILENO);
        close(fds[0]);
        close(fds[1]);
        close(in[0]);
        close(in[1]);
        setpgid(0, 0); /* a terminal's ^C reaches the bench only */
        execvp(argv[0], argv);
        _exit(127);
    }
    close(fds[1]);
    close(in[0]);
    if (pid < 0) {
        close(fds[0]);
        close(in[1]);
        return -1;
    }
    *out_fd = fds[0];
    *ack_fd = in[1];
    return pid;
}

/* One line from fd into buf (without the newline), waiting at most until deadline. */
static bool read_line(int fd, char *buf, size_t cap, double deadline)
{
    size_t n = 0;
    while (n + 1 < cap) {
        struct pollfd p = {fd, POLLIN, 0};
        double left = deadline - vb_now();
        char ch;
        if (left <= 0 || vb_interrupted)
            return false;
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0)
            continue;
        ssize_t got = read(fd, &ch, 1);
        if (got <= 0)
            return false;
        if (ch == '\n')
            break;
        buf[n++] = ch;
    }
    buf[n] = '\0';
    return true;
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void pct3(const cJSON *o, const char *k, double out[3])
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, k);
    for (int i = 0; i < 3; i++) {
        const cJSON *v = cJSON_GetArrayItem(a, i);
        out[i] = cJSON_IsNumber(v) ? v->valuedouble : 0;
    }
}

static bool parse_result(vb_env *e, vb_mode m, bool batched, const char *line, vb_cell *out)
{
    cJSON *r = cJSON_Parse(line);
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(r, "system");
    const cJSON *fe = cJSON_GetObjectItemCaseSensitive(r, "first_error");
    if (!r)
        return false;
    out->seconds = num(r, "seconds");
    out->items = (long)num(r, "items");
    out->claim_calls = (long)num(r, "claim_calls");
    out->disp_calls = (long)num(r, "disp_calls");
    /* a cycle is one fetch + one completion; graphile-worker's are internal: one per job */
    out->cycles = out->disp_calls > 0 ? out->disp_calls : out->items / (batched ? VB_MAX_BATCH : 1);
    out->errors = (long)num(r, "errors");
    out->empty_claims = (long)num(r, "empty");
    pct3(r, "claim_ms", out->claim_ms);
    pct3(r, "disp_ms", out->disp_ms);
    if (cJSON_IsString(sys))
        snprintf(e->peer_system[m], sizeof(e->peer_system[m]), "%s", sys->valuestring);
    if (cJSON_IsString(fe) && fe->valuestring[0])
        snprintf(out->first_error, sizeof(out->first_error), "%s", fe->valuestring);
    cJSON_Delete(r);
    return true;
}

bool vb_peer_run(vb_env *e, const vb_options *o, vb_scenario s, vb_mode m, int clients,
                 vb_cell *out)
{
    char line[4096];
    double before[5], deadline;
    int fd = -1, ack = -1, st = 0;
    bool ok = false, batched = s == VB_SCENARIO_BATCH_CALL;
    pid_t pid;
    memset(out, 0, sizeof(*out));
    out->scenario = s;
    out->mode = m;
    out->clients = clients;
    out->rss_idle_kb = out->rss_peak_kb = -1;
    if (!vb_cell_settle(e, o))
        return false;
    if ((pid = spawn_harness(e, o, s, m, clients, &fd, &ack)) < 0)
        return false;
    /* set-up (schema, stock) may take a while; then the window itself */
    deadline = vb_now() + 300 + o->warmup + o->duration;
    if (read_line(fd, line, sizeof(line), deadline) && strcmp(line, "measure") == 0) {
        vb_window_open(e, pid, before, out);
        if (read_line(fd, line, sizeof(line), deadline) && strcmp(line, "stop") == 0) {
            vb_window_close(e, pid, before, out);
            ok = write(ack, "ok\n", 3) == 3 && read_line(fd, line, sizeof(line), deadline) &&
                 parse_result(e, m, batched, line, out);
        }
    }
    close(fd);
    close(ack);
    if (!ok)
        kill(pid, SIGTERM);
    waitpid(pid, &st, 0);
    if (!ok) {
        fprintf(stderr, "verdict-bench: the %s harness failed (status %d)\n", vb_mode_name(m), st);
        return false;
    }
    if (out->seconds > 0 && out->items / out->seconds > e->peer_peak[m])
        e->peer_peak[m] = out->items / out->seconds;
    return !vb_interrupted;
}
