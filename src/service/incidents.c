/* incidents.c - tooling incidents (see incidents.h): the regex signature (kept on each
 * failure and as the accuracy baseline of the template miner) and the hint are pure;
 * vd_incident_note runs inside the tool-failure transaction and vd_incident_resolve is its own
 * transaction. The per-flow-step settings are the flow step's (flow_steps.h). Depends on the store,
 * never on HTTP. */
#include "verdict/incidents.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/store.h"
#include "verdict/store/flow_steps.h"
#include "verdict/store/incidents.h"
#include "verdict/model_text.h"

typedef struct sig_out {
    char *buf;
    size_t cap, len; /* cap: bytes usable for text */
    bool space;      /* a space is pending (written before the next visible byte) */
} sig_out;

static void put(sig_out *o, const char *s, size_t n)
{
    if (o->space && o->len > 0 && o->len < o->cap)
        o->buf[o->len++] = ' ';
    o->space = false;
    for (size_t i = 0; i < n && o->len < o->cap; i++)
        o->buf[o->len++] = s[i];
}

static bool is_word(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static bool is_hex(char c)
{
    return isxdigit((unsigned char)c) != 0;
}

/* The length of the run of non-space bytes at s, without trailing punctuation. */
static size_t token_len(const char *s)
{
    size_t n = 0;
    while (s[n] && !isspace((unsigned char)s[n]))
        n++;
    while (n > 0 && strchr(".,;:!?)]}>\"'`", s[n - 1]))
        n--;
    return n;
}

static bool is_url(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && isalpha((unsigned char)s[i]))
        i++;
    return i > 0 && i + 3 < n && strncmp(s + i, "://", 3) == 0;
}

/* /abs, ~/x, ./x, ../x, C:\x, or a word with a slash inside (dir/file). */
static bool is_path(const char *s, size_t n)
{
    if (n >= 2 && (s[0] == '/' || (s[0] == '~' && s[1] == '/')))
        return true;
    if ((n >= 3 && strncmp(s, "./", 2) == 0) || (n >= 4 && strncmp(s, "../", 3) == 0))
        return true;
    if (n >= 3 && isalpha((unsigned char)s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/'))
        return true;
    for (size_t i = 1; i + 1 < n; i++) {
        if (s[i] == '/' || s[i] == '\\')
            return true;
    }
    return false;
}

static size_t uuid_len(const char *s)
{
    static const int groups[] = {8, 4, 4, 4, 12};
    size_t i = 0;
    for (int g = 0; g < 5; g++) {
        for (int k = 0; k < groups[g]; k++, i++) {
            if (!is_hex(s[i]))
                return 0;
        }
        if (g < 4 && s[i++] != '-')
            return 0;
    }
    return is_word(s[i]) ? 0 : i;
}

/* 0x1f…, or 8+ hex digits with both a digit and a letter, standing alone. */
static size_t hex_len(const char *s)
{
    size_t i = 0;
    bool digit = false, alpha = false;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && is_hex(s[2])) {
        for (i = 2; is_hex(s[i]); i++)
            ;
        return is_word(s[i]) ? 0 : i;
    }
    for (; is_hex(s[i]); i++) {
        digit |= isdigit((unsigned char)s[i]) != 0;
        alpha |= isalpha((unsigned char)s[i]) != 0;
    }
    return i >= 8 && digit && alpha && !is_word(s[i]) ? i : 0;
}

/* A number: digits, with '.' or ',' between digits. */
static size_t number_len(const char *s)
{
    size_t i = 0;
    while (isdigit((unsigned char)s[i]) ||
           ((s[i] == '.' || s[i] == ',') && i > 0 && isdigit((unsigned char)s[i + 1])))
        i++;
    return i;
}

/* A quoted value at s (its opening quote): the length up to and with the closing quote on
 * the same line, or 0. A ' opens only at a word start (so "can't" stays). */
static size_t quote_len(const char *s, bool word_start)
{
    char q = s[0];
    if (!(q == '"' || q == '`' || (q == '\'' && word_start)))
        return 0;
    for (size_t i = 1; s[i] && s[i] != '\n'; i++) {
        if (s[i] == q)
            return i + 1;
    }
    return 0;
}

/* The mask for the value at p, and its length (0: none). */
static size_t mask_at(const char *p, bool start, bool word_start, const char **mask)
{
    size_t t = start ? token_len(p) : 0;
    size_t q = quote_len(p, word_start);
    size_t u = word_start ? uuid_len(p) : 0;
    size_t h = word_start && !u ? hex_len(p) : 0;
    size_t num = number_len(p);
    if (q) { /* a quoted path or URL is one quoted value */
        *mask = "<q>";
        return q;
    }
    if (t && is_url(p, t)) {
        *mask = "<url>";
        return t;
    }
    if (t && is_path(p, t)) {
        *mask = "<path>";
        return t;
    }
    *mask = u ? "<id>" : h ? "<hex>" : num ? "<n>" : NULL;
    return u ? u : h ? h : num;
}

/* len, or less so that buf[0..len) does not end inside a UTF-8 sequence (a cut text). */
static size_t utf8_whole(const char *buf, size_t len)
{
    size_t k = len;
    while (k > 0 && len - k < 4 && ((unsigned char)buf[k - 1] & 0xC0) == 0x80)
        k--;
    if (k == 0)
        return len;
    unsigned char lead = (unsigned char)buf[k - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return len - (k - 1) < need ? k - 1 : len;
}

size_t vd_tool_signature(const char *error, char *buf, size_t n)
{
    size_t cap = n - 1 < VD_SIGNATURE_MAX ? n - 1 : VD_SIGNATURE_MAX;
    sig_out o = {buf, cap, 0, false};
    for (const char *p = error ? error : ""; *p && o.len < o.cap;) {
        bool start = p == error || isspace((unsigned char)p[-1]);
        bool word_start = p == error || !is_word(p[-1]);
        const char *mask = NULL;
        size_t len = isspace((unsigned char)*p) ? 0 : mask_at(p, start, word_start, &mask);
        if (isspace((unsigned char)*p)) {
            o.space = true;
            p++;
        } else if (len) {
            put(&o, mask, strlen(mask));
            p += len;
        } else {
            put(&o, p++, 1);
        }
    }
    o.len = utf8_whole(buf, o.len);
    buf[o.len] = '\0';
    return o.len;
}

void vd_incident_hint(const vd_incident_ref *inc, char *buf, size_t n)
{
    char tool[VD_MODEL_QUOTE_TOOL + 4]; /* the cut name and its "…" */
    vd_model_quote(inc->tool, VD_MODEL_QUOTE_TOOL, tool, sizeof(tool));
    snprintf(buf, n, /* with the tool_result's prefix, at most 280 characters */
             "'%s' fails the same way on %ld items (tooling incident %lld): a tooling bug, not "
             "a problem with the source. Call defer_item with reason_code tool_error.",
             tool, inc->items, (long long)inc->id);
}

vd_error vd_incident_note(vd_conn *c, const vd_incident_failure *f, int64_t *own,
                          vd_incident_ref *open)
{
    vd_flow_step_settings s;
    vd_incident_key k = {f->flow_step_id, f->tool,    f->template_text,
                         f->sample_error, f->item_id, f->template_id};
    bool opened = false;
    vd_error rc = VD_OK;
    memset(open, 0, sizeof(*open));
    *own = 0;
    if (f->counts && f->known) { /* the template's incident is open: join it */
        rc = vd_store_incident_link(c, f->known, f->item_id, f->tool, open);
        if (rc || open->id) {
            *own = open->id;
            return rc;
        }
    }
    if (f->counts) {
        rc = vd_store_incident_lock(c, f->flow_step_id, f->template_id);
        if (rc == VD_OK)
            rc = vd_store_flow_step_settings(c, f->flow_step_id, &s);
        if (rc == VD_OK)
            rc = vd_store_incident_note(c, &k, s.incident_window_minutes, s.incident_min_items,
                                        s.pause_on_incident, own, &opened);
    }
    return rc ? rc : vd_store_incident_open(c, f->flow_step_id, 0, f->tool, open);
}

typedef struct resolve_ctx {
    int64_t id;
    bool requeue;
    const char *reason, *actor;
    char *out;
} resolve_ctx;

static vd_error resolve_tx(vd_conn *c, void *arg)
{
    resolve_ctx *r = arg;
    vd_error rc = vd_store_incident_close(c, r->id, r->reason, r->actor);
    free(r->out);
    r->out = NULL;
    return rc ? rc : vd_store_incident_requeue(c, r->id, r->requeue, r->reason, r->actor, &r->out);
}

vd_error vd_incident_resolve(vd_conn *conn, int64_t id, bool requeue, const char *reason,
                             const char *actor, char **out)
{
    resolve_ctx r = {id, requeue, reason, actor, NULL};
    vd_error rc = vd_store_tx(conn, resolve_tx, &r);
    *out = NULL;
    if (rc == VD_OK)
        *out = r.out;
    else
        free(r.out);
    return rc;
}
