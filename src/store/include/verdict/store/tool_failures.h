/* store/tool_failures.h - a job's tool failures as rows (src/store/templates.c): the insert
 * and the mark that makes one final. The rules that decide them are verdict/tool_failures.h. */
#ifndef VERDICT_STORE_TOOL_FAILURES_H
#define VERDICT_STORE_TOOL_FAILURES_H

#include <stdbool.h>
#include <stdint.h>

#include "verdict/error.h"
#include "verdict/store.h"

typedef struct vd_tool_failure_row {
    int64_t job_id, template_id;
    const char *tool, *args, *kind, *error, *signature;
    bool retryable, required, counted;
} vd_tool_failure_row;
/* Insert the failure row; *failure_id its id. VD_ERR_NOT_FOUND when the job is gone. */
VD_MUST_USE vd_error vd_store_tool_failure_insert_template(vd_conn *c,
                                                           const vd_tool_failure_row *row,
                                                           int64_t *failure_id);
/* Mark failure_id deterministic and not retryable (found so after its insert). */
VD_MUST_USE vd_error vd_store_tool_failure_final(vd_conn *c, int64_t failure_id);

#endif
