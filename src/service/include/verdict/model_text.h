/* model_text.h - the rules every text a model reads must keep (envelope hints, tool_result,
 * refusals, briefings, MCP tool errors, tool descriptions): at most VD_MODEL_TEXT_MAX
 * characters, at most one next tool named, nothing a model cannot do (no HTTP paths, no
 * "claim new work"), "Stop now." at the end exactly when the turn should end, and quotes cut
 * at a word boundary with "…". Also the model-facing text of each refusal. Pure. */
#ifndef VERDICT_MODEL_TEXT_H
#define VERDICT_MODEL_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict/error.h"

#define VD_MODEL_TEXT_MAX 280   /* characters (UTF-8 code points) */
#define VD_MODEL_QUOTE_TOOL 40  /* bytes of a tool name quoted in a text */
#define VD_MODEL_QUOTE_ERROR 80 /* bytes of an error text quoted in a text */

/* The first rule text breaks, as a short static phrase, or NULL when it keeps them all.
 * ends_turn: the text must end with "Stop now." (else it must not say it). */
const char *vd_model_text_violation(const char *text, bool ends_turn);

/* How many distinct tools the model can call text names (complete_item, reject_source,
 * defer_item, fail_item, report_tool_failure, skip_item). */
int vd_model_text_tools(const char *text);

/* s copied into out (len bytes), cut to at most max bytes at a word boundary (never inside
 * a UTF-8 character) with "…" appended when cut. */
void vd_model_quote(const char *s, size_t max, char *out, size_t len);

/* The model-facing text of a refused tool call with error `code` (field: the argument it
 * names, or NULL) into out: what happened and the one thing to do next. */
void vd_model_refusal(vd_error code, const char *field, char *out, size_t len);

/* Whether a refusal with this code ends the model's turn (nothing is left to call). */
bool vd_model_refusal_ends_turn(vd_error code);

#endif
