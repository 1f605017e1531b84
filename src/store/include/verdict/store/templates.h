/* store/templates.h - a flow step's failure templates as rows (src/store/templates.c,
 * sql/migrations/0030), read and saved inside the tool-failure transaction. The miner itself is
 * pure (verdict/templates.h). */
#ifndef VERDICT_STORE_TEMPLATES_H
#define VERDICT_STORE_TEMPLATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict/error.h"
#include "verdict/store.h"

typedef struct vd_tpl_rows {
    size_t n;
    int64_t *id;                /* malloc'd */
    char **text;                /* malloc'd, each malloc'd */
    long *same_tool, *same_job; /* malloc'd: the job's earlier failures of each template */
    int64_t *incident;          /* malloc'd: each one's open incident, 0 when none */
} vd_tpl_rows;

void vd_tpl_rows_cleanup(vd_tpl_rows *r);
/* Lock (flow_step_id, shape) until the transaction ends (two replicas join one at a time) and
 * read its templates into *out (free with vd_tpl_rows_cleanup), each with the earlier
 * failures of job_id that joined it (of `tool`, and of any tool) and its open incident. */
VD_MUST_USE vd_error vd_store_templates_of_shape(vd_conn *c, const char *flow_step_id,
                                                 const char *shape, int64_t job_id,
                                                 const char *tool, vd_tpl_rows *out);
/* Save the template a failure joined: id 0 inserts a new one of flow_step_id and shape and
 * *out_id receives its id; an existing one is written only when changed (deferred: sent with
 * the next statement, whose error is its error), and *out_id is id. */
VD_MUST_USE vd_error vd_store_template_save(vd_conn *c, int64_t id, bool changed,
                                            const char *flow_step_id, const char *shape,
                                            const char *text, int64_t *out_id);

#endif
