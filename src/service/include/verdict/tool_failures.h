/* tool_failures.h - SPEC §6: record a tool failure of a job and answer the envelope the
 * caller hands back to the model: whether retrying can work, how often this exact call has
 * failed, and a hint naming the tool. Classification and hints are pure functions. */
#ifndef VERDICT_TOOL_FAILURES_H
#define VERDICT_TOOL_FAILURES_H

#include <stdbool.h>
#include <stdint.h>

#include "verdict/config.h"
#include "verdict/error.h"
#include "verdict/incidents.h"
#include "verdict/store.h"
#include "verdict/templates.h"

typedef enum vd_tool_kind {
    VD_TOOL_KIND_UNKNOWN = 0,
    VD_TOOL_KIND_DETERMINISTIC,
    VD_TOOL_KIND_TRANSIENT,
    VD_TOOL_KIND__MAX
} vd_tool_kind;

/* "deterministic" / "transient" / "unknown". */
const char *vd_tool_kind_name(vd_tool_kind k);
/* Classify a failure by the evidence in its own template (vd_tpl_classify on the text
 * alone, no store): transient when the template's constant tokens show transient evidence
 * and no deterministic marker, deterministic otherwise. Pure. */
vd_tool_kind vd_tool_kind_classify(const char *error);

/* How a failure was classified: the plugin's label (UNKNOWN: none), the class its template's
 * text shows, the final class, and why. */
typedef struct vd_tool_classification {
    vd_tool_kind label, text, final;
    char why[256];
} vd_tool_classification;

/* The plugin's kind is a prior: final is the label when there is one, else the text's class;
 * a failure whose template recurs (the 2nd time in the job, or its incident is open) is
 * deterministic whatever its label unless its own text shows transient evidence. text_why is
 * vd_tpl_classify's. Pure. */
void vd_tool_classification_decide(vd_tool_kind label, vd_tpl_class text, const char *text_why,
                                   bool recurs, vd_tool_classification *out);

typedef struct vd_tool_failure {
    int64_t job_id;
    const char *token;
    const char *tool;
    const char *args;  /* canonical JSON text (keys sorted) */
    const char *error; /* verbatim; stored redacted */
    vd_tool_kind kind;
    bool required;
} vd_tool_failure;

typedef struct vd_tool_verdict {
    vd_tool_kind kind; /* after classification */
    bool retryable;
    long repeat_count; /* failures of the same (tool, template) in this job, this one included */
    char hint[512];
    /* the tooling incident open in the job's flow step (incidents.h), id 0 when none: the
     * hint then says so */
    vd_incident_ref incident;
} vd_tool_verdict;

/* Whether a retry can work and the hint, for the n-th failure of a (tool, args). When the
 * tool is required and will not be called again, the hint steers to defer_item or fail.
 * Pure. */
void vd_tool_verdict_decide(vd_tool_kind kind, const char *tool, bool required, long repeat_count,
                            int loop_threshold, vd_tool_verdict *out);

/* The tool-failure envelope's extra facts: how it was classified and its template. */
typedef struct vd_tool_failure_facts {
    vd_tool_classification classification;
    int64_t template_id;
    char template_text[VD_TPL_TEXT_MAX + 1];
} vd_tool_failure_facts;

/* Record f in one transaction on conn: fenced by the claim token like every job write. The
 * failure's signature counts towards a tooling incident (vd_incident_note) in the same
 * transaction.
 * Errors: VD_ERR_NOT_FOUND, CLAIM_LOST, JOB_FINALIZED, DATABASE_UNAVAILABLE. */
VD_MUST_USE vd_error vd_tool_failure_record(vd_conn *conn, const vd_config *cfg,
                                            const vd_tool_failure *f, vd_tool_verdict *out);
/* The same, and *facts (may be NULL) says how it was classified and its template. The
 * failure is mined into its flow step's templates (templates.h); the loop guard counts by
 * (job, tool, template), whatever the arguments. */
VD_MUST_USE vd_error vd_tool_failure_record_facts(vd_conn *conn, const vd_config *cfg,
                                                  const vd_tool_failure *f, vd_tool_verdict *out,
                                                  vd_tool_failure_facts *facts);

#endif
