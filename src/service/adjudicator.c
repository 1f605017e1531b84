/* adjudicator.c - the session-outcome adjudicator of session-outcome.md: the predicates of
 * §3, the procedure of §4, the answer of §5 and the entry points. Its helpers are in
 * adjudicator_text.c (text and regexes) and adjudicator_stream.c (parsing stdout, §2).
 * Pure: no I/O, no mutable globals, every allocation belongs to one call; deterministic and
 * thread-safe. */
#include "adjudicator_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/util.h"

/* ---- predicates (§3) ---- */

static struct span result_of(const struct sess *s)
{
    return vd__adj_sb_span(&s->result);
}

static bool marker_set(const struct adj *a)
{
    return a->marker.len > 0;
}

static bool failure_subtype(vd_cli_subtype t)
{
    return t == VD_CLI_SUBTYPE_UNKNOWN || t == VD_CLI_SUBTYPE_EMPTY_OUTPUT ||
           t == VD_CLI_SUBTYPE_UNPARSEABLE || t == VD_CLI_SUBTYPE_TIMEOUT ||
           t == VD_CLI_SUBTYPE_IDLE_STALL;
}

static bool session_complete(const struct sess *s)
{
    return !s->is_error && !failure_subtype(s->subtype);
}

static bool kill_anomaly(const struct sess *s)
{
    return s->subtype == VD_CLI_SUBTYPE_UNPARSEABLE || s->subtype == VD_CLI_SUBTYPE_EMPTY_OUTPUT ||
           s->subtype == VD_CLI_SUBTYPE_INTERRUPTED ||
           (s->subtype == VD_CLI_SUBTYPE_SUCCESS && vd__adj_blank(result_of(s)));
}

static bool context_exhausted(const struct sess *s)
{
    if (s->ctx_flag)
        return true;
    if (!s->is_error)
        return false;
    for (size_t i = 0; i < s->errors.n; i++) {
        if (vd__adj_contains_ci(vd__adj_span_of(s->errors.v[i]), PROMPT_TOO_LONG))
            return true;
    }
    return (s->subtype == VD_CLI_SUBTYPE_SUCCESS || s->subtype == VD_CLI_SUBTYPE_ERROR_MAX_TURNS) &&
           vd__adj_contains_ci(result_of(s), PROMPT_TOO_LONG);
}

static bool api_needs_retry(const struct sess *s)
{
    return s->subtype == VD_CLI_SUBTYPE_ERROR_MAX_TURNS || context_exhausted(s);
}

static bool content_ok(struct adj *a, const struct sess *s, const struct rxlist *p)
{
    struct span r = vd__adj_trim(result_of(s));
    if (s->is_error || r.len == 0 || failure_subtype(s->subtype))
        return false;
    if (marker_set(a) && (vd__adj_blank_without(r, a->marker) || !vd__adj_contains(r, a->marker)))
        return false;
    return vd__adj_patterns_ok(a, r, p);
}

static vd_content_state content_state(struct adj *a, const struct sess *s)
{
    struct span r = vd__adj_trim(result_of(s));
    if (s->is_error)
        return VD_CONTENT_STATE_SESSION_ERROR;
    if (r.len == 0)
        return VD_CONTENT_STATE_ABSENT;
    if (!marker_set(a) && a->pats.n == 0)
        return VD_CONTENT_STATE_COMPLETE;
    if (marker_set(a) && !vd__adj_contains(r, a->marker))
        return VD_CONTENT_STATE_ABSENT;
    if (!vd__adj_patterns_ok(a, r, &a->pats))
        return VD_CONTENT_STATE_CONTRACT_VIOLATION;
    return VD_CONTENT_STATE_COMPLETE;
}

/* Whether some assistant message has a "\n"-split line that trims to the marker. */
static bool marker_line(const struct adj *a, const struct sess *s)
{
    for (size_t m = 0; m < s->messages.n; m++) {
        struct span text = vd__adj_span_of(s->messages.v[m]);
        size_t i = 0;
        while (i <= text.len) {
            const char *nl = memchr(text.p + i, '\n', text.len - i);
            size_t end = nl ? (size_t)(nl - text.p) : text.len;
            if (vd__adj_span_eq(vd__adj_trim((struct span){text.p + i, end - i}), a->marker))
                return true;
            i = end + 1;
        }
    }
    return false;
}

/* separate_marker(s) of §3; when it holds, *joined holds the messages joined by "\n\n". */
static bool separate_marker(struct adj *a, const struct sess *s, vd_buf *joined)
{
    joined->len = 0;
    if (!marker_set(a) || !marker_line(a, s))
        return false;
    vd__adj_append_joined(a, joined, &s->messages, "\n\n");
    return !vd__adj_blank_without(vd__adj_sb_span(joined), a->marker);
}

static vd_infra_exit infra_exit(struct adj *a, const struct sess *s)
{
    if (context_exhausted(s))
        return VD_INFRA_EXIT_CONTEXT_EXHAUSTED;
    if (vd__adj_rx_search(a, a->api, vd__adj_span_of(a->r->stderr_text)))
        return VD_INFRA_EXIT_API_ERROR;
    /* Only a reported returncode counts as killed: unknown is never a signal. */
    if (a->r->returncode_known && a->r->returncode < 0)
        return VD_INFRA_EXIT_PROCESS_KILLED;
    return VD_INFRA_EXIT_COMPLETED;
}

/* ---- the procedure (§4) ---- */

/* B, R3: with a confirmed channel, look for the output contract in the assistant messages. */
static void recover_patterns(struct adj *a, struct sess *s)
{
    vd_buf joined = {0}, merged = {0};
    if (a->r->channel == VD_CHANNEL_UNMONITORED || a->pats.n == 0 ||
        vd__adj_patterns_ok(a, vd__adj_trim(result_of(s)), &a->pats))
        return;
    vd__adj_append_joined(a, &joined, &s->messages, "\n\n");
    if (joined.len > 0 && vd__adj_patterns_ok(a, vd__adj_sb_span(&joined), &a->pats)) {
        if (s->result.len > 0) {
            vd__adj_sb_append(a, &merged, s->result.data, s->result.len);
            vd__adj_sb_append(a, &merged, "\n\n", 2);
        }
        vd__adj_sb_append(a, &merged, joined.data, joined.len);
        vd__adj_sb_move(&s->result, &merged);
    }
    vd_buf_cleanup(&joined);
    vd_buf_cleanup(&merged);
}

/* B. RECOVERY: R1 (marker seen in a session log the stdout lost), R2, R3. */
static void recover(struct adj *a, struct sess *s)
{
    vd_buf joined = {0};
    vd_channel ch = a->r->channel;
    if ((ch == VD_CHANNEL_B || ch == VD_CHANNEL_DIR_MISSING) &&
        (s->subtype == VD_CLI_SUBTYPE_UNPARSEABLE || s->subtype == VD_CLI_SUBTYPE_EMPTY_OUTPUT) &&
        separate_marker(a, s, &joined)) {
        vd__adj_sb_move(&s->result, &joined);
        s->subtype = VD_CLI_SUBTYPE_SUCCESS;
        s->is_error = false;
    }
    if (session_complete(s)) {
        if (separate_marker(a, s, &joined))
            vd__adj_sb_move(&s->result, &joined);
        recover_patterns(a, s);
    }
    vd_buf_cleanup(&joined);
}

/* C. compute_success(s, rc, term, channel, P). */
static bool compute_success(struct adj *a, const struct sess *s, int rc, vd_termination term,
                            const struct rxlist *p)
{
    struct span res = result_of(s);
    bool substantive = s->subtype == VD_CLI_SUBTYPE_SUCCESS && !vd__adj_blank(res);
    /* Channel B is authoritative, unless a contract exists and the session is incomplete. */
    if (a->r->channel == VD_CHANNEL_B && !(p->n > 0 && !session_complete(s)))
        return vd__adj_patterns_ok(a, vd__adj_trim(res), p);
    switch (term) {
    case VD_TERMINATION_COMPLETED:
        if (rc != 0 && !substantive)
            return false;
        return content_ok(a, s, p);
    case VD_TERMINATION_NATURAL_EXIT:
        if (rc != 0)
            return substantive && marker_set(a) && vd__adj_contains(res, a->marker) &&
                   content_ok(a, s, p);
        return content_ok(a, s, p);
    default:
        return false;
    }
}

/* D. compute_retry(s, rc, term, channel); the reason goes to *reason. */
static bool compute_retry(struct adj *a, const struct sess *s, int rc, vd_termination term,
                          vd_retry_reason *reason)
{
    vd_channel ch = a->r->channel;
    struct span res = result_of(s);
    *reason = VD_RETRY_REASON_NONE;
    if (api_needs_retry(s)) {
        *reason = VD_RETRY_REASON_RESUME;
        return true;
    }
    if (term == VD_TERMINATION_COMPLETED) {
        if (ch == VD_CHANNEL_B || !kill_anomaly(s))
            return false;
        *reason = VD_RETRY_REASON_RESUME;
        return true;
    }
    if (term != VD_TERMINATION_NATURAL_EXIT || ch == VD_CHANNEL_A || ch == VD_CHANNEL_B || rc != 0)
        return false;
    if (kill_anomaly(s)) {
        *reason = s->thinking_only       ? VD_RETRY_REASON_THINKING_STALL
                  : context_exhausted(s) ? VD_RETRY_REASON_RESUME
                                         : VD_RETRY_REASON_EMPTY_OUTPUT;
        return true;
    }
    if (s->subtype == VD_CLI_SUBTYPE_SUCCESS && !vd__adj_blank(res) && marker_set(a) &&
        !vd__adj_contains(res, a->marker)) {
        *reason = VD_RETRY_REASON_EARLY_STOP;
        return true;
    }
    return false;
}

/* The subtype label table of §4, read from s.subtype after A and B. */
static vd_subtype_label label_of(const struct adj *a, const struct sess *s, bool success)
{
    static const vd_subtype_label same_name[VD_CLI_SUBTYPE__MAX] = {
        [VD_CLI_SUBTYPE_SUCCESS] = VD_SUBTYPE_LABEL_SUCCESS,
        [VD_CLI_SUBTYPE_ERROR_MAX_TURNS] = VD_SUBTYPE_LABEL_ERROR_MAX_TURNS,
        [VD_CLI_SUBTYPE_ERROR_DURING_EXECUTION] = VD_SUBTYPE_LABEL_ERROR_DURING_EXECUTION,
        [VD_CLI_SUBTYPE_CONTEXT_EXHAUSTION] = VD_SUBTYPE_LABEL_CONTEXT_EXHAUSTION,
        [VD_CLI_SUBTYPE_UNKNOWN] = VD_SUBTYPE_LABEL_UNKNOWN,
        [VD_CLI_SUBTYPE_EMPTY_OUTPUT] = VD_SUBTYPE_LABEL_EMPTY_OUTPUT,
        [VD_CLI_SUBTYPE_UNPARSEABLE] = VD_SUBTYPE_LABEL_UNPARSEABLE,
        [VD_CLI_SUBTYPE_TIMEOUT] = VD_SUBTYPE_LABEL_TIMEOUT,
        [VD_CLI_SUBTYPE_INTERRUPTED] = VD_SUBTYPE_LABEL_INTERRUPTED,
        [VD_CLI_SUBTYPE_IDLE_STALL] = VD_SUBTYPE_LABEL_IDLE_STALL,
    };
    struct span res = result_of(s);
    if (success)
        return VD_SUBTYPE_LABEL_SUCCESS; /* verdict labels every success "success" */
    if (s->subtype != VD_CLI_SUBTYPE_SUCCESS)
        return same_name[s->subtype];
    if (vd__adj_blank(res))
        return VD_SUBTYPE_LABEL_EMPTY_RESULT;
    if (context_exhausted(s))
        return VD_SUBTYPE_LABEL_CONTEXT_EXHAUSTED;
    if (marker_set(a) && !vd__adj_contains(res, a->marker))
        return VD_SUBTYPE_LABEL_MISSING_COMPLETION_MARKER;
    return VD_SUBTYPE_LABEL_ADJUDICATED_FAILURE;
}

/* G1. */
static void budget_guard(const struct adj *a, struct verdict *v)
{
    if (v->retry && a->r->prior_consecutive_retries >= a->r->max_consecutive_retries) {
        v->retry = false;
        v->reason = VD_RETRY_REASON_BUDGET_EXHAUSTED;
    }
}

/* G3's condition: the skill was expected to write files. */
static bool writes_expected(struct adj *a, const struct sess *s)
{
    const vd_write_behavior *wb = &a->r->write_behavior;
    vd_buf text = {0};
    bool expected;
    if (wb->mode == VD_WRITE_MODE_ALWAYS)
        return true;
    if (wb->mode != VD_WRITE_MODE_CONDITIONAL || a->when.n == 0)
        return false;
    vd__adj_append_without(a, &text, result_of(s), a->marker);
    expected = vd__adj_patterns_ok(a, vd__adj_trim(vd__adj_sb_span(&text)), &a->when);
    vd_buf_cleanup(&text);
    return expected;
}

/* G. POST-GATES, in order. */
static void post_gates(struct adj *a, const struct sess *s, bool evidence, struct verdict *v)
{
    budget_guard(a, v);
    if (!v->success && !v->retry && v->label == VD_SUBTYPE_LABEL_ADJUDICATED_FAILURE && evidence) {
        v->retry = true;
        v->reason = VD_RETRY_REASON_CONTRACT_RECOVERY;
        budget_guard(a, v);
    }
    if (v->success && !evidence && writes_expected(a, s)) {
        /* No budget guard: a zero-write success is retried regardless. */
        v->success = false;
        v->retry = true;
        v->reason = VD_RETRY_REASON_ZERO_WRITES;
        v->label = VD_SUBTYPE_LABEL_ZERO_WRITES;
    }
    if (v->retry && v->reason == VD_RETRY_REASON_EMPTY_OUTPUT && evidence) {
        v->reason = VD_RETRY_REASON_COMPLETED_NO_FLUSH;
        v->label = VD_SUBTYPE_LABEL_COMPLETED_NO_FLUSH;
        budget_guard(a, v);
    }
}

/* C-G for every termination but stale and idle_stall. */
static void decide(struct adj *a, const struct sess *s, int rc, vd_infra_exit infra, bool evidence,
                   struct verdict *v)
{
    vd_termination term = a->r->termination;
    vd_channel ch = a->r->channel;
    v->success = compute_success(a, s, rc, term, &a->pats);
    v->retry = compute_retry(a, s, rc, term, &v->reason);
    if (v->success && v->retry)
        v->success = false; /* E, contradiction: a retry signal wins */
    /* E, dead end: only absent content (a drain race) is worth another run. */
    if (!v->success && !v->retry && (ch == VD_CHANNEL_A || ch == VD_CHANNEL_B) &&
        content_state(a, s) == VD_CONTENT_STATE_ABSENT) {
        v->retry = true;
        v->reason = VD_RETRY_REASON_DRAIN_RACE;
    }
    if (!v->success && infra == VD_INFRA_EXIT_API_ERROR) {
        v->retry = true;
        v->reason = VD_RETRY_REASON_RESUME;
    }
    if (!v->success && !v->retry && infra == VD_INFRA_EXIT_PROCESS_KILLED &&
        a->r->kill_reason == VD_KILL_REASON_NATURAL_EXIT && term != VD_TERMINATION_TIMED_OUT) {
        v->retry = true; /* killed by someone else */
        v->reason = VD_RETRY_REASON_RESUME;
    }
    v->label = label_of(a, s, v->success);
    post_gates(a, s, evidence, v);
}

/* A, stale / idle_stall: recover a finished result or retry; only G1 follows. */
static void decide_stalled(struct adj *a, const struct sess *s, struct verdict *v)
{
    bool idle = a->r->termination == VD_TERMINATION_IDLE_STALL;
    int rc = a->r->returncode_known ? a->r->returncode : -1;
    if (s->subtype == VD_CLI_SUBTYPE_SUCCESS && !vd__adj_blank(result_of(s)) && !s->is_error &&
        compute_success(a, s, rc, VD_TERMINATION_COMPLETED, &vd__adj_no_patterns)) {
        v->success = true;
        v->label = idle ? VD_SUBTYPE_LABEL_RECOVERED_FROM_IDLE_STALL
                        : VD_SUBTYPE_LABEL_RECOVERED_FROM_STALE;
        return;
    }
    v->retry = true;
    v->reason = idle ? VD_RETRY_REASON_IDLE_STALL : VD_RETRY_REASON_STALE;
    v->label = idle ? VD_SUBTYPE_LABEL_IDLE_STALL : VD_SUBTYPE_LABEL_STALE;
    budget_guard(a, v);
}

/* A, timed_out: a success cut off by the timeout is a timeout. */
static void apply_timeout(struct sess *s)
{
    if (s->subtype == VD_CLI_SUBTYPE_SUCCESS || s->blank_stdout) {
        s->subtype = VD_CLI_SUBTYPE_TIMEOUT;
        s->is_error = true;
    }
}

/* ---- the answer (§5) ---- */

static size_t skip_chars(struct span t, size_t n)
{
    for (size_t i = 0; i < t.len; i++) {
        if (((unsigned char)t.p[i] & 0xC0) != 0x80) {
            if (n == 0)
                return i;
            n--;
        }
    }
    return t.len;
}

/* The result without markers, trimmed, cut to its last VD_RESULT_TEXT_MAX_CHARS code points.
 * Returns a heap string (NULL only when memory ran out). */
static char *result_text(struct adj *a, const struct sess *s)
{
    vd_buf stripped = {0}, out = {0};
    struct span t;
    size_t chars;
    vd__adj_append_without(a, &stripped, result_of(s), a->marker);
    t = vd__adj_trim(vd__adj_sb_span(&stripped));
    chars = vd_utf8_count(t.p, t.len);
    if (chars > VD_RESULT_TEXT_MAX_CHARS) {
        size_t cut = chars - VD_RESULT_TEXT_MAX_CHARS, at = skip_chars(t, cut);
        char prefix[64];
        int n = snprintf(prefix, sizeof prefix, "...[truncated %zu chars]...\n", cut);
        vd__adj_sb_append(a, &out, prefix, n > 0 ? (size_t)n : 0);
        t.p += at;
        t.len -= at;
    }
    vd__adj_sb_append(a, &out, t.p, t.len);
    vd_buf_cleanup(&stripped);
    return out.data;
}

/* result_text as it may be stored and served to readers: bounded, then redacted. */
static char *redacted_result_text(struct adj *a, const struct sess *s)
{
    char *raw = result_text(a, s), *clean = raw ? vd_redact(raw) : NULL;
    free(raw);
    if (raw && !clean)
        a->oom = true;
    return clean;
}

static void fill_answer(struct adj *a, const struct sess *s, const struct verdict *v,
                        vd_infra_exit infra, bool evidence, vd_adjudication *out)
{
    out->success = v->success;
    out->needs_retry = v->retry;
    out->outcome = v->success ? VD_SESSION_OUTCOME_SUCCEEDED
                   : v->retry ? VD_SESSION_OUTCOME_RETRIABLE
                              : VD_SESSION_OUTCOME_FAILED;
    out->retry_reason = v->reason;
    out->subtype = v->label;
    out->content_state = content_state(a, s);
    out->cli_subtype = s->subtype;
    out->infra_exit = infra;
    out->write_evidence = evidence;
    out->result_text = redacted_result_text(a, s);
    out->warnings = a->warnings.v;
    out->n_warnings = a->warnings.n;
    a->warnings.v = NULL;
    a->warnings.n = a->warnings.cap = 0;
}

/* §4 on a parsed session, then the answer. */
static void run(struct adj *a, struct sess *s, vd_adjudication *out)
{
    const vd_session_report *r = a->r;
    struct verdict v = {false, false, VD_RETRY_REASON_NONE, VD_SUBTYPE_LABEL_SUCCESS};
    bool evidence = s->write_calls >= 1 || r->fs_writes_detected;
    int rc = r->returncode_known ? r->returncode : -1;
    vd_infra_exit infra;
    if (r->termination == VD_TERMINATION_STALE || r->termination == VD_TERMINATION_IDLE_STALL) {
        infra = infra_exit(a, s);
        decide_stalled(a, s, &v);
    } else {
        if (r->termination == VD_TERMINATION_TIMED_OUT) {
            apply_timeout(s);
            rc = -1;
        }
        recover(a, s);
        infra = infra_exit(a, s);
        decide(a, s, rc, infra, evidence, &v);
    }
    fill_answer(a, s, &v, infra, evidence, out);
}

/* ---- entry points ---- */

static bool text_ok(const char *s)
{
    return s == NULL || vd_utf8_valid(s, strlen(s));
}

static bool texts_ok(const char **v, size_t n)
{
    if (n > 0 && v == NULL)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!text_ok(v[i]))
            return false;
    }
    return true;
}

static bool in_range(int v, int max)
{
    return v >= 0 && v < max;
}

/* The report's own contract (see vd_adjudicate), so that the procedure can trust it. */
static bool report_ok(const vd_session_report *r)
{
    const vd_parsed_session *p = &r->parsed;
    if (!in_range((int)r->termination, VD_TERMINATION__MAX) ||
        !in_range((int)r->channel, VD_CHANNEL__MAX) ||
        !in_range((int)r->kill_reason, VD_KILL_REASON__MAX) ||
        !in_range((int)r->write_behavior.mode, VD_WRITE_MODE__MAX) ||
        r->prior_consecutive_retries < 0 || r->max_consecutive_retries < 1)
        return false;
    if (!text_ok(r->stderr_text) || !text_ok(r->completion_marker) ||
        !texts_ok(r->expected_output_patterns, r->n_expected_output_patterns) ||
        !texts_ok(r->write_behavior.expected_when, r->write_behavior.n_expected_when))
        return false;
    if (!r->has_parsed)
        return text_ok(r->stdout_text);
    return in_range((int)p->subtype, VD_CLI_SUBTYPE__MAX) && text_ok(p->result) &&
           texts_ok(p->errors, p->n_errors) &&
           texts_ok(p->assistant_messages, p->n_assistant_messages);
}

void vd_session_report_init(vd_session_report *r)
{
    memset(r, 0, sizeof *r);
    r->max_consecutive_retries = VD_DEFAULT_MAX_CONSECUTIVE_RETRIES;
    r->stdout_text = "";
    r->parsed.subtype = VD_CLI_SUBTYPE_UNKNOWN;
}

vd_error vd_adjudicate(const vd_session_report *r, vd_adjudication *out)
{
    struct adj a;
    struct sess s;
    vd_error err = VD_OK;
    memset(out, 0, sizeof *out);
    memset(&s, 0, sizeof s);
    if (r == NULL || !report_ok(r))
        return VD_ERR_INVALID_FIELD;
    vd__adj_init(&a, r);
    if (a.oom)
        goto out;
    if (r->has_parsed)
        vd__adj_load_parsed(&a, &r->parsed, &s);
    else
        vd__adj_parse_stdout(&a, r->stdout_text, &s);
    if (a.oom)
        goto out;
    run(&a, &s, out);
out:
    if (a.oom || a.budget_exhausted) {
        vd_adjudication_cleanup(out);
        err = a.oom ? VD_ERR_INTERNAL : VD_ERR_MATCH_BUDGET_EXHAUSTED;
    }
    vd__adj_sess_free(&s);
    vd__adj_free(&a);
    return err;
}

void vd_adjudication_cleanup(vd_adjudication *a)
{
    if (a == NULL)
        return;
    free(a->result_text);
    for (size_t i = 0; i < a->n_warnings; i++)
        free(a->warnings[i]);
    free(a->warnings);
    memset(a, 0, sizeof *a);
}
