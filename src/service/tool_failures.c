/* tool_failures.c - SPEC §6 (see tool_failures.h): classify, count the same call, decide
 * `retryable`, write the hint, and record it fenced by the claim token. A deterministic
 * failure is never worth a retry; a transient one is, until the loop threshold. */
#include "verdict/tool_failures.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/fence.h"
#include "verdict/model_text.h"
#include "verdict/store/templates.h"
#include "verdict/store/tool_failures.h"
#include "verdict/store.h"
#include "verdict/store/incidents.h"
#include "verdict/store/jobs.h"
#include "verdict/util.h"

const char *vd_tool_kind_name(vd_tool_kind k)
{
    static const char *names[VD_TOOL_KIND__MAX] = {"unknown", "deterministic", "transient"};
    return (int)k >= 0 && k < VD_TOOL_KIND__MAX ? names[k] : "unknown";
}

vd_tool_kind vd_tool_kind_classify(const char *error)
{
    char why[200];
    vd_tpl_msg *m = malloc(sizeof(*m));
    vd_tpl_class c = VD_TPL_NONE;
    if (m) {
        vd_tpl_parse(error, m);
        c = vd_tpl_classify(NULL, m, why, sizeof(why));
    }
    free(m);
    return c == VD_TPL_TRANSIENT ? VD_TOOL_KIND_TRANSIENT : VD_TOOL_KIND_DETERMINISTIC;
}

void vd_tool_classification_decide(vd_tool_kind label, vd_tpl_class text, const char *text_why,
                                   bool recurs, vd_tool_classification *out)
{
    out->label = label;
    out->text = text == VD_TPL_TRANSIENT ? VD_TOOL_KIND_TRANSIENT : VD_TOOL_KIND_DETERMINISTIC;
    out->final = label != VD_TOOL_KIND_UNKNOWN ? label : out->text;
    if (out->final == VD_TOOL_KIND_TRANSIENT && text != VD_TPL_TRANSIENT && recurs) {
        out->final = VD_TOOL_KIND_DETERMINISTIC;
        snprintf(out->why, sizeof(out->why),
                 "deterministic: the same failure template recurs, whatever its label (%s)",
                 text_why);
    } else if (label != VD_TOOL_KIND_UNKNOWN && label != out->text) {
        snprintf(out->why, sizeof(out->why), "%s: the plugin's label; the text reads %s (%s)",
                 vd_tool_kind_name(label), vd_tool_kind_name(out->text), text_why);
    } else {
        snprintf(out->why, sizeof(out->why), "%s", text_why);
    }
}

void vd_tool_verdict_decide(vd_tool_kind kind, const char *tool, bool required, long repeat_count,
                            int loop_threshold, vd_tool_verdict *out)
{
    /* a required tool that will not be called again leaves the task unfinishable; the texts
     * keep model_text.h's rules (one next tool, at most 280 characters with the tool_result
     * prefix: test_model_text walks them) */
    static const char required_tail[] =
        " It is required, so the item cannot be finished now: call defer_item with reason_code "
        "tool_error.";
    static const char optional_tail[] = " If the item cannot be finished without it, call "
                                        "defer_item.";
    char name[VD_MODEL_QUOTE_TOOL + 8];
    const char *tail = required ? required_tail : optional_tail;
    vd_model_quote(tool, VD_MODEL_QUOTE_TOOL, name, sizeof(name));
    out->kind = kind;
    out->repeat_count = repeat_count;
    out->retryable = kind != VD_TOOL_KIND_DETERMINISTIC && repeat_count < loop_threshold;
    if (kind == VD_TOOL_KIND_DETERMINISTIC) {
        snprintf(out->hint, sizeof(out->hint),
                 "Do not call '%s' again in this job: the same input gives the same result.%s",
                 name, tail);
    } else if (out->retryable) {
        snprintf(out->hint, sizeof(out->hint),
                 "'%s' failed for a transient reason (network, rate limit or provider); calling "
                 "it again may succeed.",
                 name);
    } else {
        snprintf(out->hint, sizeof(out->hint),
                 "Stop calling '%s': it failed %ld times in this job.%s", name, repeat_count, tail);
    }
}

typedef struct record_ctx {
    const vd_config *cfg;
    const vd_tool_failure *f;
    vd_tool_verdict *out;
    vd_tool_failure_facts *facts;
    char *redacted;
    char signature[VD_SIGNATURE_MAX + 1];
    vd_tpl_msg msg;
    vd_tpl_class text;
    char text_why[200];
    long same_tool, same_job;
    int64_t failure_id, known_incident; /* the template's incident open when read */
} record_ctx;

/* Mine the failure into its flow step's templates: join the most similar of its shape (under
 * the shape's lock, so two replicas never race) or start one; the job's earlier failures of
 * that template come with the read. */
static vd_error mine(vd_conn *c, record_ctx *r, const char *flow_step)
{
    char shape[VD_TPL_SHAPE_MAX + 1];
    vd_tpl_rows rows;
    vd_tool_failure_facts *x = r->facts;
    vd_tpl_shape(&r->msg, shape, sizeof(shape));
    vd_error rc = vd_store_templates_of_shape(c, flow_step, shape, r->f->job_id, r->f->tool, &rows);
    if (rc)
        return rc;
    int best = vd_tpl_choose((const char *const *)rows.text, rows.n, &r->msg, x->template_text,
                             sizeof(x->template_text));
    r->same_tool = best >= 0 ? rows.same_tool[best] : 0;
    r->same_job = best >= 0 ? rows.same_job[best] : 0;
    r->known_incident = best >= 0 ? rows.incident[best] : 0;
    rc = vd_store_template_save(c, best >= 0 ? rows.id[best] : 0,
                                best >= 0 && strcmp(rows.text[best], x->template_text) != 0,
                                flow_step, shape, x->template_text, &x->template_id);
    vd_tpl_rows_cleanup(&rows);
    return rc;
}

/* Classify and decide: the label is a prior, the template's text the evidence, a recurrence
 * in the job or an open incident of the template the verdict. */
static void decide(record_ctx *r, bool incident)
{
    const vd_tool_failure *f = r->f;
    vd_tool_classification *cls = &r->facts->classification;
    vd_tool_classification_decide(f->kind, r->text, r->text_why, r->same_job > 0 || incident, cls);
    vd_tool_verdict_decide(cls->final, f->tool, f->required, r->same_tool + 1,
                           r->cfg->loop_threshold, r->out);
}

static vd_error insert_row(vd_conn *c, record_ctx *r, bool counted)
{
    const vd_tool_failure *f = r->f;
    vd_tool_failure_row row = {.job_id = f->job_id,
                               .template_id = r->facts->template_id,
                               .tool = f->tool,
                               .args = f->args,
                               .kind = vd_tool_kind_name(r->out->kind),
                               .error = r->redacted,
                               .signature = r->signature,
                               .retryable = r->out->retryable,
                               .required = f->required,
                               .counted = counted};
    return vd_store_tool_failure_insert_template(c, &row, &r->failure_id);
}

/* The incident part of the record: every failure whose own text shows no transient evidence
 * counts toward its template's incident, whatever its label; an open incident of its
 * template makes it deterministic. */
static vd_error note_incident(vd_conn *c, record_ctx *r, const vd_job_snapshot *snap)
{
    const vd_tool_failure *f = r->f;
    bool counted = r->text != VD_TPL_TRANSIENT || r->out->kind == VD_TOOL_KIND_DETERMINISTIC;
    vd_incident_failure inc = {.flow_step_id = snap->flow_step_id,
                               .tool = f->tool,
                               .template_text = r->facts->template_text,
                               .sample_error = r->redacted,
                               .item_id = snap->item_id,
                               .template_id = r->facts->template_id,
                               .known = r->known_incident,
                               .counts = counted};
    int64_t own = 0;
    vd_error rc = insert_row(c, r, counted);
    if (rc == VD_OK)
        rc = vd_incident_note(c, &inc, &own, &r->out->incident);
    if (rc == VD_OK && own && r->out->kind == VD_TOOL_KIND_TRANSIENT &&
        r->text != VD_TPL_TRANSIENT) { /* this failure opened its template's incident */
        vd_incident_ref keep = r->out->incident;
        decide(r, true);
        r->out->incident = keep;
        rc = vd_store_tool_failure_final(c, r->failure_id);
    }
    if (rc == VD_OK && r->out->incident.id)
        vd_incident_hint(&r->out->incident, r->out->hint, sizeof(r->out->hint));
    return rc;
}

static vd_error record_tx(vd_conn *c, void *arg)
{
    record_ctx *r = arg;
    const vd_tool_failure *f = r->f;
    vd_job_snapshot snap;
    vd_error rc = vd_store_job_lock(c, f->job_id, f->token, NULL, &snap);
    if (rc || (rc = vd_job_fence(&snap)) || (rc = mine(c, r, snap.flow_step_id)))
        goto out;
    r->text = vd_tpl_classify(r->facts->template_text, &r->msg, r->text_why, sizeof(r->text_why));
    decide(r, r->known_incident != 0);
    rc = note_incident(c, r, &snap);
out:
    vd_job_snapshot_cleanup(&snap);
    return rc;
}

vd_error vd_tool_failure_record_facts(vd_conn *conn, const vd_config *cfg, const vd_tool_failure *f,
                                      vd_tool_verdict *out, vd_tool_failure_facts *facts)
{
    vd_tool_failure_facts own;
    record_ctx *r = calloc(1, sizeof(*r));
    vd_error rc = VD_ERR_INTERNAL;
    memset(&out->incident, 0, sizeof(out->incident));
    if (!r)
        return rc;
    *r = (record_ctx){.cfg = cfg, .f = f, .out = out, .facts = facts ? facts : &own};
    memset(r->facts, 0, sizeof(*r->facts));
    r->redacted = vd_redact(f->error);
    if (r->redacted) { /* from the redacted text: no secret reaches a template */
        vd_tool_signature(r->redacted, r->signature, sizeof(r->signature));
        vd_tpl_parse(r->redacted, &r->msg);
        rc = vd_store_tx(conn, record_tx, r);
    }
    free(r->redacted);
    free(r);
    return rc;
}

vd_error vd_tool_failure_record(vd_conn *conn, const vd_config *cfg, const vd_tool_failure *f,
                                vd_tool_verdict *out)
{
    return vd_tool_failure_record_facts(conn, cfg, f, out, NULL);
}
