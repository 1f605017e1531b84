/* store/briefing.h - an item's earlier attempts as the briefing shows them (src/store/lint.c). */
#ifndef VERDICT_STORE_BRIEFING_H
#define VERDICT_STORE_BRIEFING_H

#include <stdint.h>
#include "verdict/error.h"
#include "verdict/store.h"

/* {"job_id","item_id","attempt","attempts":[{job_id, attempt, status, disposition,
 * reason_code, reason, finished_at, tool_failures:[{tool, kind, count, last_error}]}]}: the
 * item's (up to 20) attempts before job_id, oldest first (malloc'd); VD_ERR_NOT_FOUND. */
VD_MUST_USE vd_error vd_store_briefing(vd_conn *c, int64_t job_id, char **out);

#endif
