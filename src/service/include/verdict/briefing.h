/* briefing.h - a short model-readable summary of an item's earlier attempts
 * (their dispositions, reasons and tool failures), to put in the next attempt's prompt.
 * Pure: the attempts are read by the store (GET /v1/jobs/{id}/briefing); no I/O here. */
#ifndef VERDICT_BRIEFING_H
#define VERDICT_BRIEFING_H

#include <stddef.h>

#include "verdict/error.h"

#define VD_BRIEFING_MAX 280 /* bytes of a briefing text, at most (model_text.h) */

/* One tool of an earlier attempt: the kind of its failures (deterministic when any was) and
 * the last error (redacted as stored). Strings borrowed. */
typedef struct vd_briefing_tool {
    const char *tool, *kind, *last_error;
} vd_briefing_tool;

/* One earlier attempt (job) of the item, oldest first. Strings borrowed, may be NULL. */
typedef struct vd_briefing_attempt {
    int attempt;
    const char *status;      /* the job's status: deferred, failed, expired, ... */
    const char *reason_code; /* as stored */
    const char *reason;      /* as stored (redacted) */
    const vd_briefing_tool *tools;
    size_t n_tools;
} vd_briefing_attempt;

/* The briefing of attempt `attempt` given its earlier attempts a[0..n) (oldest first), e.g.
 * "Attempt 3. Attempts 1–2 deferred (tool_error): 'wiki_upsert' failed deterministically
 * ('target_path must stay inside root'). Do not reject the source for that." Consecutive
 * attempts that ended the same way are told once; quoted texts are cut at a word boundary
 * (tool names at 40 bytes, errors and reasons at 80, with "…"); when the
 * whole would pass VD_BRIEFING_MAX bytes the oldest attempts are left out (and it says so).
 * Returns malloc'd text, NULL when out of memory. */
VD_MUST_USE char *vd_briefing_render(int attempt, const vd_briefing_attempt *a, size_t n);

#endif
