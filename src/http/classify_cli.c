/* classify_cli.c - `verdictd classify` (classify.h): JSON lines in, JSON lines out, through
 * the same redaction, template miner (templates.h) and classification rule
 * (vd_tool_classification_decide) as POST /v1/jobs/{id}/tool-failures, with an in-memory
 * template store instead of PostgreSQL. Lives with the JSON codecs; needs no database. */
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "verdict/classify.h"
#include "verdict/redact.h"
#include "verdict/templates.h"
#include "verdict/tool_failures.h"

typedef struct run_state {
    vd_tpl_mem store;
    long *seen; /* failures per template id so far */
    size_t seen_cap;
} run_state;

/* The line's tool, error and kind, or a message in err. */
static bool read_line(const cJSON *o, const char **error, vd_tool_kind *kind, const char **err)
{
    const cJSON *it = NULL;
    *kind = VD_TOOL_KIND_UNKNOWN;
    if (!cJSON_IsObject(o))
        return (*err = "each line must be a JSON object"), false;
    cJSON_ArrayForEach(it, o)
    {
        const char *k = it->string, *v = cJSON_GetStringValue(it);
        if (strcmp(k, "tool") != 0 && strcmp(k, "error") != 0 && strcmp(k, "kind") != 0)
            return (*err = "unknown member: only tool, error and kind are read"), false;
        if (!v)
            return (*err = "tool, error and kind must be strings"), false;
        if (strcmp(k, "error") == 0)
            *error = v;
        for (int i = 0; strcmp(k, "kind") == 0 && i <= VD_TOOL_KIND__MAX; i++) {
            if (i == VD_TOOL_KIND__MAX)
                return (*err = "kind must be deterministic, transient or unknown"), false;
            if (strcmp(v, vd_tool_kind_name((vd_tool_kind)i)) == 0) {
                *kind = (vd_tool_kind)i;
                break;
            }
        }
    }
    if (!*error || !cJSON_GetObjectItemCaseSensitive(o, "tool"))
        return (*err = "tool and error are required"), false;
    return true;
}

static bool count_seen(run_state *st, int64_t id, long *before)
{
    if ((size_t)id >= st->seen_cap) {
        size_t cap = (size_t)id * 2 + 16;
        long *n = realloc(st->seen, cap * sizeof(*n));
        if (!n)
            return false;
        memset(n + st->seen_cap, 0, (cap - st->seen_cap) * sizeof(*n));
        st->seen = n;
        st->seen_cap = cap;
    }
    *before = st->seen[id]++;
    return true;
}

/* The answer to one accepted line (NULL: out of memory). */
static cJSON *answer(run_state *st, const char *error, vd_tool_kind kind)
{
    char *red = vd_redact(error), tpl[VD_TPL_TEXT_MAX + 1], why[256];
    vd_tpl_msg *m = malloc(sizeof(*m));
    int64_t id = 0;
    long before = 0;
    vd_tool_classification c;
    cJSON *o = NULL;
    if (red && m) {
        vd_tpl_parse(red, m);
        if (vd_tpl_mem_add(&st->store, m, &id, tpl, sizeof(tpl)) && count_seen(st, id, &before)) {
            vd_tpl_class text = vd_tpl_classify(tpl, m, why, sizeof(why));
            vd_tool_classification_decide(kind, text, why, before > 0, &c);
            o = cJSON_CreateObject();
        }
    }
    if (o && !(cJSON_AddStringToObject(o, "class", vd_tool_kind_name(c.final)) &&
               cJSON_AddNumberToObject(o, "template_id", (double)id) &&
               cJSON_AddStringToObject(o, "template", tpl) &&
               cJSON_AddStringToObject(o, "why", c.why))) {
        cJSON_Delete(o);
        o = NULL;
    }
    free(m);
    free(red);
    return o;
}

static bool write_line(FILE *out, cJSON *o)
{
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    bool ok = text && fprintf(out, "%s\n", text) >= 0;
    free(text);
    cJSON_Delete(o);
    return ok;
}

int vd_classify_run(FILE *in, FILE *out)
{
    run_state st = {.seen = NULL};
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    vd_tpl_mem_init(&st.store);
    for (long lineno = 1; rc != 2 && getline(&buf, &cap, in) >= 0; lineno++) {
        cJSON *o = cJSON_Parse(buf), *reply = NULL;
        const char *error = NULL, *err = NULL;
        vd_tool_kind kind;
        if (o && read_line(o, &error, &kind, &err)) {
            reply = answer(&st, error, kind);
        } else {
            char msg[160];
            snprintf(msg, sizeof(msg), "line %ld: %s", lineno, err ? err : "not JSON");
            reply = cJSON_CreateObject();
            cJSON_AddStringToObject(reply, "error", msg);
            rc = 1;
        }
        cJSON_Delete(o);
        if (!write_line(out, reply))
            rc = 2;
    }
    fflush(out);
    free(buf);
    free(st.seen);
    vd_tpl_mem_cleanup(&st.store);
    return rc;
}
