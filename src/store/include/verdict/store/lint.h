/* store/lint.h - what the rejection lint reads of a job (src/store/lint.c), inside the
 * finishing transaction. */
#ifndef VERDICT_STORE_LINT_H
#define VERDICT_STORE_LINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "verdict/error.h"
#include "verdict/store.h"

/* What the rejection lint needs of job job_id (inside the finishing transaction, after the
 * job is locked): evidence may be NULL (then evidence_found is false). VD_ERR_NOT_FOUND when
 * there is no such job. */
typedef struct vd_reject_facts {
    bool deterministic_failure;  /* a tool failure of kind deterministic in this job */
    bool retriable_adjudication; /* the job's adjudication: outcome retriable / needs_retry */
    bool strict_evidence;        /* flow_steps.strict_evidence of the job's flow step */
    bool evidence_found;         /* evidence is quoted in the item's payload */
    char **failures;             /* the error texts of the item's tool failures (any job,
                                    newest first, at most 50; malloc'd: vd_reject_facts_cleanup) */
    size_t n_failures;
} vd_reject_facts;
void vd_reject_facts_cleanup(vd_reject_facts *f);
VD_MUST_USE vd_error vd_store_reject_facts(vd_conn *c, int64_t job_id, const char *evidence,
                                           vd_reject_facts *out);

#endif
