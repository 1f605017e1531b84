/* fuzz_adjudicator.c - libFuzzer target for the adjudicator and its JSON codec.
 *
 * The first input byte picks the mode. Even: the rest is the agent's stdout (skipped unless
 * it is NUL-free valid UTF-8), adjudicated under the termination, channel, kill reason and
 * marker the first byte selects. Odd: the rest is a whole `session` JSON object, decoded
 * with the codec and adjudicated. Either way the answer must come back VD_OK, satisfy the
 * §5 invariants and encode to JSON; anything else aborts. Not wired into CMake. Build:
 *
 *   clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -D_DEFAULT_SOURCE \
 *     -D_POSIX_C_SOURCE=200809L -Isrc/common/include -Isrc/store/include -Isrc/service/include \
 *     -Isrc/http/include -Isrc tests/fuzz/fuzz_adjudicator.c \
 *     src/service/adjudicator.c src/http/adjudication_codec.c src/common/error.c \
 *     src/common/util.c src/common/json_scan.c src/common/redact.c -lpthread -lcjson \
 *     -lpcre2-8 -lm -o fuzz_adjudicator
 *   ./fuzz_adjudicator -max_len=65536 -dict=... corpus_dir/
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/adjudication_codec.h"
#include "verdict/adjudicator.h"
#include "verdict/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const fuzz_patterns[] = {"verdict\\s*=\\s*(GO|NO GO)", "(", "\\w+$"};

/* The §5 invariants; aborts on the first broken one. */
static void check_answer(const vd_adjudication *a)
{
    cJSON *json;
    if (a->success && a->needs_retry)
        abort();
    if (a->outcome != (a->success       ? VD_SESSION_OUTCOME_SUCCEEDED
                       : a->needs_retry ? VD_SESSION_OUTCOME_RETRIABLE
                                        : VD_SESSION_OUTCOME_FAILED))
        abort();
    if ((a->subtype == VD_SUBTYPE_LABEL_SUCCESS) && !a->success)
        abort();
    if ((a->retry_reason == VD_RETRY_REASON_NONE) != (a->outcome != VD_SESSION_OUTCOME_RETRIABLE) &&
        !(a->retry_reason == VD_RETRY_REASON_BUDGET_EXHAUSTED &&
          a->outcome == VD_SESSION_OUTCOME_FAILED))
        abort();
    if (a->retry_reason == VD_RETRY_REASON_DRAIN_RACE &&
        (a->content_state == VD_CONTENT_STATE_CONTRACT_VIOLATION ||
         a->content_state == VD_CONTENT_STATE_SESSION_ERROR))
        abort();
    json = vd_adjudication_to_json(a);
    if (json == NULL)
        abort();
    cJSON_Delete(json);
}

static void fuzz_stdout(uint8_t mode, const char *text)
{
    vd_session_report r;
    vd_adjudication a;
    vd_session_report_init(&r);
    r.termination = (vd_termination)((mode >> 1) % VD_TERMINATION__MAX);
    r.channel = (vd_channel)((mode >> 4) % VD_CHANNEL__MAX);
    r.kill_reason = (vd_kill_reason)((mode >> 6) % VD_KILL_REASON__MAX);
    r.returncode_known = (mode & 0x08) != 0;
    r.completion_marker = (mode & 0x04) ? "%%ORDER_UP%%" : "";
    r.expected_output_patterns = (const char **)fuzz_patterns;
    r.n_expected_output_patterns = (mode & 0x02) ? 3 : 0;
    r.stdout_text = text;
    if (vd_adjudicate(&r, &a) != VD_OK)
        abort();
    check_answer(&a);
    vd_adjudication_cleanup(&a);
}

static void fuzz_session(const char *text)
{
    cJSON *session = cJSON_Parse(text);
    vd_session_report r;
    vd_adjudication a;
    const char *field = NULL;
    if (session == NULL)
        return;
    if (vd_session_report_from_json(session, 3, &r, &field) == VD_OK) {
        /* The codec validated everything the adjudicator checks. */
        if (vd_adjudicate(&r, &a) != VD_OK)
            abort();
        check_answer(&a);
        vd_adjudication_cleanup(&a);
    } else if (field == NULL) {
        abort();
    }
    vd_session_report_cleanup(&r);
    cJSON_Delete(session);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text;
    if (size == 0 || memchr(data + 1, '\0', size - 1) != NULL ||
        !vd_utf8_valid((const char *)data + 1, size - 1))
        return 0;
    text = malloc(size);
    if (text == NULL)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    if (data[0] & 1)
        fuzz_session(text);
    else
        fuzz_stdout(data[0], text);
    free(text);
    return 0;
}
