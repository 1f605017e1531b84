/* model_text.c - the rules of model-facing texts and the refusal texts (see model_text.h).
 * Pure: no I/O, no globals that change. */
#include "verdict/model_text.h"

#include <stdio.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *const model_tools[] = {"complete_item", "reject_source",       "defer_item",
                                          "fail_item",     "report_tool_failure", "skip_item"};

static bool word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether word occurs in text as a whole identifier. */
static bool has_identifier(const char *text, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        if ((p == text || !word_char(p[-1])) && !word_char(p[n]))
            return true;
    }
    return false;
}

int vd_model_text_tools(const char *text)
{
    int n = 0;
    for (size_t i = 0; text && i < COUNT(model_tools); i++)
        n += has_identifier(text, model_tools[i]);
    return n;
}

static size_t code_points(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

const char *vd_model_text_violation(const char *text, bool ends_turn)
{
    /* substrings a model cannot act on: an HTTP path or URL (not a route: text naming one is
     * refused), an HTTP verb, a header, "claim new" */
    static const char *const undoable[] = {"/v1/",      "http://",   "https://",
                                           "GET ",      "POST ",     "PATCH ",
                                           "claim new", "Claim new", "X-Request-Id"};
    if (!text || !*text)
        return "empty";
    if (code_points(text) > VD_MODEL_TEXT_MAX)
        return "longer than 280 characters";
    if (vd_model_text_tools(text) > 1)
        return "names more than one tool";
    for (size_t i = 0; i < COUNT(undoable); i++) {
        if (strstr(text, undoable[i]))
            return "asks for something a model cannot do";
    }
    if (ends_turn && !ends_with(text, "Stop now."))
        return "does not end with \"Stop now.\"";
    if (!ends_turn && strstr(text, "Stop now."))
        return "says \"Stop now.\" but the turn goes on";
    return NULL;
}

void vd_model_quote(const char *s, size_t max, char *out, size_t len)
{
    size_t n = s ? strlen(s) : 0, cut = 0;
    if (len == 0)
        return;
    if (n <= max) {
        snprintf(out, len, "%s", s ? s : "");
        return;
    }
    cut = max;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--; /* a character boundary */
    for (size_t i = cut; i > max / 2; i--) {
        if (s[i] == ' ') { /* the last space in the second half: a word boundary */
            cut = i;
            break;
        }
    }
    while (cut > 0 && (s[cut - 1] == ' ' || s[cut - 1] == ','))
        cut--;
    snprintf(out, len, "%.*s\xe2\x80\xa6", (int)cut, s);
}

bool vd_model_refusal_ends_turn(vd_error code)
{
    return code == VD_ERR_CLAIM_LOST || code == VD_ERR_JOB_FINALIZED ||
           code == VD_ERR_INVALID_TRANSITION || code == VD_ERR_CLAIM_MISMATCH ||
           code == VD_ERR_INTERNAL || code == VD_ERR_FORBIDDEN || code == VD_ERR_UNAUTHORIZED;
}

/* The fixed text of a code, or NULL for the ones that name a field. */
static const char *fixed(vd_error code)
{
    switch (code) {
    case VD_ERR_CLAIM_LOST:
        return "This item is no longer yours: its claim was lost or taken, and nothing was "
               "recorded. Stop now.";
    case VD_ERR_JOB_FINALIZED:
        return "This job already has its final answer; nothing more was recorded. Stop now.";
    case VD_ERR_INVALID_TRANSITION:
        return "The item's state no longer allows this; nothing was recorded. Stop now.";
    case VD_ERR_TOOL_FAILURE_PENDING:
        return "A tool this item needs failed and has not succeeded since, so the item cannot "
               "be closed now. Call defer_item with reason_code tool_error.";
    case VD_ERR_REJECTION_SUSPECT:
        return "This reads like a tool failure, not a problem with the source. Call defer_item "
               "with reason_code tool_error: the source stays eligible.";
    case VD_ERR_EVIDENCE_NOT_FOUND:
        return "The evidence is not in the item's payload. Quote it word for word, or call "
               "defer_item if you cannot point at what is wrong with the source.";
    case VD_ERR_TOOLING_INCIDENT_OPEN:
        return "A tool fails the same way on many items right now: a tooling bug, not the "
               "source. Call defer_item with reason_code tool_error.";
    case VD_ERR_DATABASE_UNAVAILABLE:
    case VD_ERR_OVERLOADED:
        return "The service is busy and nothing was recorded. Call the same tool again in a "
               "moment.";
    case VD_ERR_PAYLOAD_TOO_LARGE:
        return "The arguments are too large; nothing was recorded. Send shorter texts.";
    default:
        return NULL;
    }
}

void vd_model_refusal(vd_error code, const char *field, char *out, size_t len)
{
    char name[VD_MODEL_QUOTE_TOOL + 8];
    const char *text = fixed(code);
    if (text) {
        snprintf(out, len, "%s", text);
        return;
    }
    vd_model_quote(field && *field ? field : "an argument", VD_MODEL_QUOTE_TOOL, name,
                   sizeof(name));
    if (code == VD_ERR_MISSING_FIELD)
        snprintf(out, len,
                 "'%s' is missing; nothing was recorded. Add it and call the same tool "
                 "again.",
                 name);
    else if (code == VD_ERR_INVALID_FIELD || code == VD_ERR_INVALID_JSON)
        snprintf(out, len,
                 "'%s' is not valid; nothing was recorded. Fix it and call the same "
                 "tool again.",
                 name);
    else if (vd_model_refusal_ends_turn(code))
        snprintf(out, len, "This call could not be recorded. Stop now.");
    else
        snprintf(out, len, "This call could not be recorded. Call defer_item.");
}
