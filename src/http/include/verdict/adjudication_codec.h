/* adjudication_codec.h - JSON <-> adjudicator structs (spec: session-outcome.md §1, §5).
 *
 * Decodes the `session` object of a request into a vd_session_report, validating every
 * field at the edge, and encodes a vd_adjudication as the §5 answer object. http layer:
 * the only place where the adjudicator meets cJSON trees.
 */
#ifndef VERDICT_ADJUDICATION_CODEC_H
#define VERDICT_ADJUDICATION_CODEC_H

#include <cjson/cJSON.h>

#include "verdict/adjudicator.h"
#include "verdict/error.h"

/* Decodes `session` (spec §1) into *out.
 *   session              borrowed; out borrows its strings, so the tree must outlive *out.
 *   default_max_retries  max_consecutive_retries when the session omits it (the server's
 *                        VERDICT_MAX_CONSECUTIVE_RETRIES); values < 1 are read as 1.
 *   out                  caller-owned storage; on VD_OK free it with
 *                        vd_session_report_cleanup() (before the tree goes away or after,
 *                        either is fine).
 *   field_out            on error, set to the name of the offending field, e.g.
 *                        "session.termination" or "session.expected_output_patterns[2]"; the
 *                        string lives in out->invalid_field until *out is reused. May be NULL.
 * Returns VD_OK; VD_ERR_MISSING_FIELD (session NULL: "session"; neither stdout nor parsed:
 * "session.stdout"); VD_ERR_INVALID_FIELD (wrong type, unknown enum string, integer not whole
 * or out of int range or below its minimum, a string that is not valid UTF-8; both stdout
 * and parsed: "session.parsed"); VD_ERR_INTERNAL (out of memory). On any error *out holds no
 * allocation. Unknown fields are ignored; an optional field set to null reads as absent
 * (so `returncode` null or absent means unknown); array elements must not be null.
 * Thread-safe. */
VD_MUST_USE vd_error vd_session_report_from_json(const cJSON *session, int default_max_retries,
                                                 vd_session_report *out, const char **field_out);

/* Frees what vd_session_report_from_json() allocated (pattern/error/message arrays and a
 * joined parsed.result) and resets *r to the defaults. Only for reports it filled; NULL-safe. */
void vd_session_report_cleanup(vd_session_report *r);

/* The encoder of an adjudication (§5) is the service's: outcomes.h. */
#include "verdict/outcomes.h"

#endif
