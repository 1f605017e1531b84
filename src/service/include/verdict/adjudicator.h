/* adjudicator.h - the session-outcome adjudicator (spec: session-outcome.md).
 *
 * Decides whether a finished agent session succeeded, is worth retrying (and why), or failed
 * for good. Input is a vd_session_report (plain C, no JSON); output is a vd_adjudication.
 * Pure: no I/O, no mutable globals, deterministic, thread-safe. Every enum below is generated
 * from one X-macro table mapping constant to wire string; *_name and *_parse convert.
 */
#ifndef VERDICT_ADJUDICATOR_H
#define VERDICT_ADJUDICATOR_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict/error.h"

/* Default of max_consecutive_retries when neither the request nor the config sets it. */
#define VD_DEFAULT_MAX_CONSECUTIVE_RETRIES 3
/* result_text keeps at most this many code points (the tail). */
#define VD_RESULT_TEXT_MAX_CHARS 5000

/* Caps on the work one adjudication may ask for (README "Limits"). The caller's regexes run
 * on text the caller sends, so each dimension is bounded: how many patterns, how long each
 * is, how much text they are matched against, how hard one match may backtrack, and how long
 * all matching of one call may take. */
#define VD_ADJ_MAX_PATTERNS 32        /* per list: expected_output_patterns, expected_when */
#define VD_ADJ_MAX_PATTERN_BYTES 1024 /* each pattern */
#define VD_ADJ_MAX_TEXT_BYTES 262144  /* stdout, stderr, result, errors, messages: in total */
#define VD_ADJ_MATCH_LIMIT 100000     /* PCRE2 match limit, per start position */
#define VD_ADJ_DEPTH_LIMIT 10000      /* PCRE2 backtracking depth limit */
#define VD_ADJ_MATCH_BUDGET_MS 1000   /* all regex matching of one call */

/* XX(CONSTANT, "wire string"); the first row of each table is the default (value 0). */
#define VD_TERMINATION_MAP(XX)                                                                     \
    XX(VD_TERMINATION_NATURAL_EXIT, "natural_exit")                                                \
    XX(VD_TERMINATION_COMPLETED, "completed")                                                      \
    XX(VD_TERMINATION_STALE, "stale")                                                              \
    XX(VD_TERMINATION_IDLE_STALL, "idle_stall")                                                    \
    XX(VD_TERMINATION_TIMED_OUT, "timed_out")

#define VD_CHANNEL_MAP(XX)                                                                         \
    XX(VD_CHANNEL_UNMONITORED, "unmonitored")                                                      \
    XX(VD_CHANNEL_A, "channel_a")                                                                  \
    XX(VD_CHANNEL_B, "channel_b")                                                                  \
    XX(VD_CHANNEL_DIR_MISSING, "dir_missing")

#define VD_KILL_REASON_MAP(XX)                                                                     \
    XX(VD_KILL_REASON_NATURAL_EXIT, "natural_exit")                                                \
    XX(VD_KILL_REASON_KILL_AFTER_COMPLETION, "kill_after_completion")                              \
    XX(VD_KILL_REASON_INFRA_KILL, "infra_kill")                                                    \
    XX(VD_KILL_REASON_EXCEPTION, "exception")                                                      \
    XX(VD_KILL_REASON_NOT_APPLICABLE, "not_applicable")

#define VD_WRITE_MODE_MAP(XX)                                                                      \
    XX(VD_WRITE_MODE_NONE, "none")                                                                 \
    XX(VD_WRITE_MODE_ALWAYS, "always")                                                             \
    XX(VD_WRITE_MODE_CONDITIONAL, "conditional")

/* The CLI subtypes of a result record (spec §2). */
#define VD_CLI_SUBTYPE_MAP(XX)                                                                     \
    XX(VD_CLI_SUBTYPE_SUCCESS, "success")                                                          \
    XX(VD_CLI_SUBTYPE_ERROR_MAX_TURNS, "error_max_turns")                                          \
    XX(VD_CLI_SUBTYPE_ERROR_DURING_EXECUTION, "error_during_execution")                            \
    XX(VD_CLI_SUBTYPE_CONTEXT_EXHAUSTION, "context_exhaustion")                                    \
    XX(VD_CLI_SUBTYPE_UNKNOWN, "unknown")                                                          \
    XX(VD_CLI_SUBTYPE_EMPTY_OUTPUT, "empty_output")                                                \
    XX(VD_CLI_SUBTYPE_UNPARSEABLE, "unparseable")                                                  \
    XX(VD_CLI_SUBTYPE_TIMEOUT, "timeout")                                                          \
    XX(VD_CLI_SUBTYPE_INTERRUPTED, "interrupted")                                                  \
    XX(VD_CLI_SUBTYPE_IDLE_STALL, "idle_stall")

#define VD_SESSION_OUTCOME_MAP(XX)                                                                 \
    XX(VD_SESSION_OUTCOME_SUCCEEDED, "succeeded")                                                  \
    XX(VD_SESSION_OUTCOME_RETRIABLE, "retriable")                                                  \
    XX(VD_SESSION_OUTCOME_FAILED, "failed")

#define VD_RETRY_REASON_MAP(XX)                                                                    \
    XX(VD_RETRY_REASON_NONE, "none")                                                               \
    XX(VD_RETRY_REASON_RESUME, "resume")                                                           \
    XX(VD_RETRY_REASON_DRAIN_RACE, "drain_race")                                                   \
    XX(VD_RETRY_REASON_EMPTY_OUTPUT, "empty_output")                                               \
    XX(VD_RETRY_REASON_THINKING_STALL, "thinking_stall")                                           \
    XX(VD_RETRY_REASON_EARLY_STOP, "early_stop")                                                   \
    XX(VD_RETRY_REASON_STALE, "stale")                                                             \
    XX(VD_RETRY_REASON_IDLE_STALL, "idle_stall")                                                   \
    XX(VD_RETRY_REASON_CONTRACT_RECOVERY, "contract_recovery")                                     \
    XX(VD_RETRY_REASON_ZERO_WRITES, "zero_writes")                                                 \
    XX(VD_RETRY_REASON_COMPLETED_NO_FLUSH, "completed_no_flush")                                   \
    XX(VD_RETRY_REASON_BUDGET_EXHAUSTED, "budget_exhausted")

#define VD_CONTENT_STATE_MAP(XX)                                                                   \
    XX(VD_CONTENT_STATE_ABSENT, "absent")                                                          \
    XX(VD_CONTENT_STATE_COMPLETE, "complete")                                                      \
    XX(VD_CONTENT_STATE_CONTRACT_VIOLATION, "contract_violation")                                  \
    XX(VD_CONTENT_STATE_SESSION_ERROR, "session_error")

#define VD_INFRA_EXIT_MAP(XX)                                                                      \
    XX(VD_INFRA_EXIT_COMPLETED, "completed")                                                       \
    XX(VD_INFRA_EXIT_API_ERROR, "api_error")                                                       \
    XX(VD_INFRA_EXIT_PROCESS_KILLED, "process_killed")                                             \
    XX(VD_INFRA_EXIT_CONTEXT_EXHAUSTED, "context_exhausted")

/* The subtype label of the answer (spec §4, "Subtype label"). */
#define VD_SUBTYPE_LABEL_MAP(XX)                                                                   \
    XX(VD_SUBTYPE_LABEL_SUCCESS, "success")                                                        \
    XX(VD_SUBTYPE_LABEL_RECOVERED_FROM_STALE, "recovered_from_stale")                              \
    XX(VD_SUBTYPE_LABEL_RECOVERED_FROM_IDLE_STALL, "recovered_from_idle_stall")                    \
    XX(VD_SUBTYPE_LABEL_EMPTY_RESULT, "empty_result")                                              \
    XX(VD_SUBTYPE_LABEL_CONTEXT_EXHAUSTED, "context_exhausted")                                    \
    XX(VD_SUBTYPE_LABEL_MISSING_COMPLETION_MARKER, "missing_completion_marker")                    \
    XX(VD_SUBTYPE_LABEL_ADJUDICATED_FAILURE, "adjudicated_failure")                                \
    XX(VD_SUBTYPE_LABEL_STALE, "stale")                                                            \
    XX(VD_SUBTYPE_LABEL_IDLE_STALL, "idle_stall")                                                  \
    XX(VD_SUBTYPE_LABEL_ZERO_WRITES, "zero_writes")                                                \
    XX(VD_SUBTYPE_LABEL_COMPLETED_NO_FLUSH, "completed_no_flush")                                  \
    XX(VD_SUBTYPE_LABEL_ERROR_MAX_TURNS, "error_max_turns")                                        \
    XX(VD_SUBTYPE_LABEL_ERROR_DURING_EXECUTION, "error_during_execution")                          \
    XX(VD_SUBTYPE_LABEL_CONTEXT_EXHAUSTION, "context_exhaustion")                                  \
    XX(VD_SUBTYPE_LABEL_UNKNOWN, "unknown")                                                        \
    XX(VD_SUBTYPE_LABEL_EMPTY_OUTPUT, "empty_output")                                              \
    XX(VD_SUBTYPE_LABEL_UNPARSEABLE, "unparseable")                                                \
    XX(VD_SUBTYPE_LABEL_TIMEOUT, "timeout")                                                        \
    XX(VD_SUBTYPE_LABEL_INTERRUPTED, "interrupted")

#define VD__ENUM_CONSTANT(constant, string) constant,

/* VD__DECLARE_ENUM(type, MAP, MAX) declares `typedef enum type {...} type;`, closed by MAX,
 * plus:
 *   const char *type_name(type v);  the wire string; "invalid" for a value out of range.
 *   bool type_parse(const char *s, type *out);  exact, case-sensitive; false (and *out
 *        untouched) for NULL or an unknown string. Both are pure and thread-safe. */
#define VD__DECLARE_ENUM(type, MAP, MAX)                                                           \
    typedef enum type { MAP(VD__ENUM_CONSTANT) MAX } type;                                         \
    const char *type##_name(type v);                                                               \
    bool type##_parse(const char *s, type *out);

VD__DECLARE_ENUM(vd_termination, VD_TERMINATION_MAP, VD_TERMINATION__MAX)
VD__DECLARE_ENUM(vd_channel, VD_CHANNEL_MAP, VD_CHANNEL__MAX)
VD__DECLARE_ENUM(vd_kill_reason, VD_KILL_REASON_MAP, VD_KILL_REASON__MAX)
VD__DECLARE_ENUM(vd_write_mode, VD_WRITE_MODE_MAP, VD_WRITE_MODE__MAX)
VD__DECLARE_ENUM(vd_cli_subtype, VD_CLI_SUBTYPE_MAP, VD_CLI_SUBTYPE__MAX)
VD__DECLARE_ENUM(vd_session_outcome, VD_SESSION_OUTCOME_MAP, VD_SESSION_OUTCOME__MAX)
VD__DECLARE_ENUM(vd_retry_reason, VD_RETRY_REASON_MAP, VD_RETRY_REASON__MAX)
VD__DECLARE_ENUM(vd_content_state, VD_CONTENT_STATE_MAP, VD_CONTENT_STATE__MAX)
VD__DECLARE_ENUM(vd_infra_exit, VD_INFRA_EXIT_MAP, VD_INFRA_EXIT__MAX)
VD__DECLARE_ENUM(vd_subtype_label, VD_SUBTYPE_LABEL_MAP, VD_SUBTYPE_LABEL__MAX)

/* Strings in the structs below are NUL-terminated UTF-8 that the report borrows (the caller
 * keeps them alive for the call); NULL reads as "". A string array is (pointer, count). */

/* write_behavior of the report. */
typedef struct vd_write_behavior {
    vd_write_mode mode;
    const char **expected_when; /* regexes; n_expected_when entries */
    size_t n_expected_when;
} vd_write_behavior;

/* The `parsed` form of the session: what the caller already extracted from stdout. */
typedef struct vd_parsed_session {
    vd_cli_subtype subtype; /* default VD_CLI_SUBTYPE_UNKNOWN */
    bool is_error;
    const char *result;
    const char **errors;
    size_t n_errors;
    const char **assistant_messages; /* used as given: no trimming, no filtering */
    size_t n_assistant_messages;
    int write_call_count;
    bool has_thinking_only_turn;
    bool context_exhausted;
    /* Storage owned by the JSON codec when it had to build `result` (array form); NULL
     * otherwise. The adjudicator never reads it. */
    char *result_buf;
} vd_parsed_session;

/* The session report (spec §1). Exactly one of stdout_text / parsed is read: parsed when
 * has_parsed, stdout_text otherwise. */
typedef struct vd_session_report {
    bool returncode_known; /* false: the returncode is unknown (JSON null or absent) */
    int returncode;        /* negative: killed by that signal */
    vd_termination termination;
    vd_channel channel;
    vd_kill_reason kill_reason;
    const char *stderr_text;
    const char *completion_marker; /* "" or NULL: no marker configured */
    const char **expected_output_patterns;
    size_t n_expected_output_patterns;
    vd_write_behavior write_behavior;
    bool fs_writes_detected;
    int prior_consecutive_retries; /* >= 0 */
    int max_consecutive_retries;   /* >= 1 */
    bool has_parsed;
    const char *stdout_text; /* the raw CLI output */
    vd_parsed_session parsed;
    /* Scratch for vd_session_report_from_json's field name on failure; unused otherwise. */
    char invalid_field[96];
    const char *invalid_reason; /* static text saying which cap was passed, or NULL */
} vd_session_report;

/* The answer (spec §5). result_text and warnings are heap-owned; free with
 * vd_adjudication_cleanup(). */
typedef struct vd_adjudication {
    vd_session_outcome outcome;
    bool success;
    bool needs_retry;
    vd_retry_reason retry_reason;
    vd_content_state content_state;
    vd_subtype_label subtype;   /* the subtype label */
    vd_cli_subtype cli_subtype; /* s.subtype after §4 A and B */
    vd_infra_exit infra_exit;
    bool write_evidence;
    char *result_text; /* malloc'd; never NULL when vd_adjudicate() returned VD_OK */
    char **warnings;   /* n_warnings malloc'd strings in a malloc'd array; NULL when none */
    size_t n_warnings;
} vd_adjudication;

/* Fills *r with the defaults of spec §1: returncode unknown, natural_exit, unmonitored,
 * natural_exit kill, no stderr/marker/patterns, write mode none, no fs writes, 0 prior
 * retries, VD_DEFAULT_MAX_CONSECUTIVE_RETRIES, stdout "" (blank), and parsed defaults
 * (subtype unknown, the rest zero). Allocates nothing. */
void vd_session_report_init(vd_session_report *r);

/* Adjudicates one session report.
 *   r    borrowed for the call; not modified.
 *   out  caller-owned storage, overwritten; on VD_OK holds heap strings the caller frees
 *        with vd_adjudication_cleanup(); on error it is zeroed (cleanup is still safe).
 * Returns VD_OK; VD_ERR_INVALID_FIELD when the report breaks its own contract (an enum out
 * of range, prior < 0, max < 1, a count > 0 with a NULL array, a string that is not valid
 * UTF-8); VD_ERR_INTERNAL when memory runs out; VD_ERR_MATCH_BUDGET_EXHAUSTED when the
 * regex matching of the call took longer than VD_ADJ_MATCH_BUDGET_MS (nothing is decided).
 * Invalid regexes are not errors: they never match and each adds a warning. Deterministic
 * (but for that budget) and thread-safe (no shared state; regexes
 * are compiled per call, and every PCRE2 match is bounded by a match and heap limit; the
 * one caveat is cJSON itself, whose parser resets a library-global error pointer on every
 * call, for the HTTP layer as much as here). */
VD_MUST_USE vd_error vd_adjudicate(const vd_session_report *r, vd_adjudication *out);

/* Frees what vd_adjudicate() allocated in *a and zeroes it. NULL-safe, idempotent. */
void vd_adjudication_cleanup(vd_adjudication *a);

#endif
