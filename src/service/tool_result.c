/* tool_result.c - the model-facing texts of answers (see tool_result.h): what a disposition
 * recorded and what happens to the item next, and a tool failure's hint. The texts speak to
 * the model ("Stop now.") because plugins hand them back verbatim as the tool call's result.
 * Pure; the caller stores the disposition's text in the kept answer so a replay says the same.
 * sql/migrations/0028_standard_tool_results.sql renders the texts without a delay in SQL too, and a
 * job keeps only a flag where both agree byte for byte: change a wording in both places
 * (test_dispositions_standard_tool_results fails when they differ). */
#include "verdict/tool_result.h"

#include <math.h>
#include <stdio.h>

#include "verdict/model_text.h"

void vd_tool_result_delay(double seconds, char *out, size_t len)
{
    double s = seconds < 1 ? 1 : seconds;
    if (s < 90)
        snprintf(out, len, "about %.0f s", floor(s + 0.5));
    else if (s < 90 * 60)
        snprintf(out, len, "about %.0f min", floor(s / 60 + 0.5));
    else if (s < 36 * 3600)
        snprintf(out, len, "about %.0f h", floor(s / 3600 + 0.5));
    else
        snprintf(out, len, "about %.0f days", floor(s / 86400 + 0.5));
}

/* What happens to the item next, after "Recorded: <what> (<code>)." */
static void next_step(vd_disposition d, vd_item_state to, double delay, char *out, size_t len)
{
    char when[40];
    vd_tool_result_delay(delay, when, sizeof(when));
    if (to == VD_ITEM_PROCESSED)
        snprintf(out, len, " The item is processed.");
    else if (to == VD_ITEM_REJECTED)
        snprintf(out, len, " The source is closed for good.");
    else if (to == VD_ITEM_MANUAL_REVIEW)
        snprintf(out, len, " The item waits for a person's review.");
    else if (to == VD_ITEM_DEFERRED && d == VD_DISPOSITION_DEFER_ITEM)
        snprintf(out, len, " The source stays eligible and is retried in %s.", when);
    else if (to == VD_ITEM_DEFERRED)
        snprintf(out, len, " The item is retried in %s.", when);
    else if (to == VD_ITEM_FAILED)
        snprintf(out, len, " The item is not retried.");
    else
        out[0] = '\0';
}

void vd_tool_result_disposition(vd_disposition disposition, const char *reason_code,
                                vd_item_state to_state, double delay_seconds, char *out, size_t len)
{
    static const char *const done[VD_DISPOSITION__MAX] = {
        [VD_DISPOSITION_COMPLETE] = "completed",
        [VD_DISPOSITION_REJECT_SOURCE] = "rejected",
        [VD_DISPOSITION_DEFER_ITEM] = "deferred",
        [VD_DISPOSITION_FAIL] = "failed",
        [VD_DISPOSITION_REQUEST_REVIEW] = "sent to an editor"};
    char next[200], code[220] = "";
    const char *what =
        (int)disposition >= 0 && disposition < VD_DISPOSITION__MAX ? done[disposition] : NULL;
    if (!what)
        what = "recorded";
    if (reason_code && *reason_code && disposition != VD_DISPOSITION_COMPLETE)
        snprintf(code, sizeof(code), " (%.200s)", reason_code);
    next_step(disposition, to_state, delay_seconds, next, sizeof(next));
    snprintf(out, len, "Recorded: %s%s.%s Stop now.", what, code, next);
}

bool vd_tool_result_failure(const char *tool, const char *kind, const char *hint, char *out,
                            size_t len)
{
    char name[VD_MODEL_QUOTE_TOOL + 8];
    vd_model_quote(tool ? tool : "", VD_MODEL_QUOTE_TOOL, name, sizeof(name));
    snprintf(out, len, "'%s' failed (%s). %s", name, kind ? kind : "unknown", hint ? hint : "");
    return false;
}
