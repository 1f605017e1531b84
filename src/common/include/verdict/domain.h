/* domain.h - the words of the state machine as C enums: item states, job statuses, transition
 * causes and dispositions. Each is generated from one X-macro table (constant, wire string)
 * whose rows equal the SQL CHECK lists (tests/unit/test_domain.c compares them with the newest
 * migration that defines each constraint). Text is parsed once, where it enters (the store's
 * rows, a request's field), and named once, where it leaves; nothing else compares the strings.
 * Pure and thread-safe. */
#ifndef VERDICT_DOMAIN_H
#define VERDICT_DOMAIN_H

#include <stdbool.h>

#include "verdict/error.h"

/* items.state (sql/migrations/0001_init.sql) */
#define VD_ITEM_STATE_MAP(XX)                                                                      \
    XX(VD_ITEM_AVAILABLE, "available")                                                             \
    XX(VD_ITEM_CLAIMED, "claimed")                                                                 \
    XX(VD_ITEM_DEFERRED, "deferred")                                                               \
    XX(VD_ITEM_PROCESSED, "processed")                                                             \
    XX(VD_ITEM_REJECTED, "rejected")                                                               \
    XX(VD_ITEM_MANUAL_REVIEW, "manual_review")                                                     \
    XX(VD_ITEM_FAILED, "failed")

/* jobs.status, transitions.job_status (sql/migrations/0006_vocabulary.sql) */
#define VD_JOB_STATUS_MAP(XX)                                                                      \
    XX(VD_JOB_PROCESSING, "processing")                                                            \
    XX(VD_JOB_COMPLETED, "completed")                                                              \
    XX(VD_JOB_REJECTED, "rejected")                                                                \
    XX(VD_JOB_DEFERRED, "deferred")                                                                \
    XX(VD_JOB_FAILED, "failed")                                                                    \
    XX(VD_JOB_EXPIRED, "expired")                                                                  \
    XX(VD_JOB_RELEASED, "released")

/* transitions.cause (sql/migrations/0034_traces_reviews.sql) */
#define VD_CAUSE_MAP(XX)                                                                           \
    XX(VD_CAUSE_REGISTER, "register")                                                              \
    XX(VD_CAUSE_CLAIM, "claim")                                                                    \
    XX(VD_CAUSE_COMPLETE, "complete")                                                              \
    XX(VD_CAUSE_REJECT_SOURCE, "reject_source")                                                    \
    XX(VD_CAUSE_DEFER_ITEM, "defer_item")                                                          \
    XX(VD_CAUSE_FAIL, "fail")                                                                      \
    XX(VD_CAUSE_SKIP_ITEM, "skip_item")                                                            \
    XX(VD_CAUSE_SESSION_OUTCOME, "session_outcome")                                                \
    XX(VD_CAUSE_LEASE_EXPIRED, "lease_expired")                                                    \
    XX(VD_CAUSE_REQUEUE, "requeue")                                                                \
    XX(VD_CAUSE_RELEASE, "release")                                                                \
    XX(VD_CAUSE_ADMIN_RELEASE, "admin_release")                                                    \
    XX(VD_CAUSE_RESOLVE, "resolve")                                                                \
    XX(VD_CAUSE_REQUEST_REVIEW, "request_review")                                                  \
    XX(VD_CAUSE_REVIEW, "review")

/* jobs.disposition (sql/migrations/0034_traces_reviews.sql); VD_DISPOSITION_NONE is SQL NULL (no
 * row, no word). */
#define VD_DISPOSITION_MAP(XX)                                                                     \
    XX(VD_DISPOSITION_COMPLETE, "complete")                                                        \
    XX(VD_DISPOSITION_REJECT_SOURCE, "reject_source")                                              \
    XX(VD_DISPOSITION_DEFER_ITEM, "defer_item")                                                    \
    XX(VD_DISPOSITION_FAIL, "fail")                                                                \
    XX(VD_DISPOSITION_SKIP_ITEM, "skip_item")                                                      \
    XX(VD_DISPOSITION_SESSION_OUTCOME, "session_outcome")                                          \
    XX(VD_DISPOSITION_REQUEST_REVIEW, "request_review")

/* The reason_code of an item parked in manual_review after VERDICT_MAX_RELEASES holder
 * releases without a verdict (the other server-set codes are written where they arise). */
#define VD_REASON_CHURN "churn"

#define VD_DOMAIN_ENUM_ROW(name, str) name,

typedef enum vd_item_state { VD_ITEM_STATE_MAP(VD_DOMAIN_ENUM_ROW) VD_ITEM__MAX } vd_item_state;
typedef enum vd_job_status { VD_JOB_STATUS_MAP(VD_DOMAIN_ENUM_ROW) VD_JOB__MAX } vd_job_status;
typedef enum vd_cause { VD_CAUSE_MAP(VD_DOMAIN_ENUM_ROW) VD_CAUSE__MAX } vd_cause;
typedef enum vd_disposition {
    VD_DISPOSITION_NONE = -1,
    VD_DISPOSITION_MAP(VD_DOMAIN_ENUM_ROW) VD_DISPOSITION__MAX
} vd_disposition;

/* The wire string of a value (static); NULL for a value outside the table (and for
 * VD_DISPOSITION_NONE). */
const char *vd_item_state_name(vd_item_state v);
const char *vd_job_status_name(vd_job_status v);
const char *vd_cause_name(vd_cause v);
const char *vd_disposition_name(vd_disposition v);

/* Parse a wire string (may be NULL); false when s is not in the table (*out is untouched). */
VD_MUST_USE bool vd_item_state_parse(const char *s, vd_item_state *out);
VD_MUST_USE bool vd_job_status_parse(const char *s, vd_job_status *out);
VD_MUST_USE bool vd_cause_parse(const char *s, vd_cause *out);
VD_MUST_USE bool vd_disposition_parse(const char *s, vd_disposition *out);

/* The transition cause a disposition's own call records (each disposition has its own). */
vd_cause vd_disposition_cause(vd_disposition d);

#endif
