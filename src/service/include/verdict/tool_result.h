/* tool_result.h - the text a plugin hands back to the model as the result of
 * its tool call, and whether the agent loop should end its turn ("terminal"), for every
 * disposition answer and every tool-failure answer. Pure functions, thread-safe. */
#ifndef VERDICT_TOOL_RESULT_H
#define VERDICT_TOOL_RESULT_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict/domain.h"

#define VD_TOOL_RESULT_MAX 768 /* bytes of a tool_result text, with its NUL */

/* "about 10 s", "about 4 min", "about 2 h", "about 3 days" for a delay in seconds. */
void vd_tool_result_delay(double seconds, char *out, size_t len);

/* The tool_result of a disposition that was applied: disposition is what was recorded (a
 * skip_item already mapped), reason_code the code stored, to_state the item's new state and
 * delay_seconds its wait when deferred. Always terminal: the job is finished. Writes the text
 * to out (truncated to len). */
void vd_tool_result_disposition(vd_disposition disposition, const char *reason_code,
                                vd_item_state to_state, double delay_seconds, char *out,
                                size_t len);

/* The tool_result of a recorded tool failure: "'<tool>' failed (<kind>). <hint>" - the hint
 * of the envelope in the model's terms. Never terminal (the model still ends the job with a
 * disposition call, or calls the tool again when retryable); returns that (false). */
bool vd_tool_result_failure(const char *tool, const char *kind, const char *hint, char *out,
                            size_t len);

#endif
