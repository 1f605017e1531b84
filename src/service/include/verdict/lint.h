/* lint.h - the rejection lint: whether a rejection of a source looks like a
 * tooling failure in disguise, and so is refused with VD_ERR_REJECTION_SUSPECT unless forced;
 * and, in a flow step's strict mode, whether it quotes evidence from the item's payload.
 * Pure functions on plain values: no I/O, no globals, thread-safe. */
#ifndef VERDICT_LINT_H
#define VERDICT_LINT_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict/error.h"

#define VD_EVIDENCE_MAX 500 /* bytes of `evidence` */

/* Whether a rejection's reason text reads like a tooling failure rather than a judgement of
 * the source: the words of vd_skip_item_map's tooling list and of the tool-failure
 * classifier ("tool error", "tool-error", "timeout", "timed out", "failed to call", "HTTP
 * 5xx", "exception", "rate limit", "connection refused", ...). NULL or "" is false. Pure. */
bool vd_lint_reads_like_tooling(const char *reason);

/* The shortest run of bytes a rejection's reason or evidence may share with a tool failure's
 * text before it reads as that failure restated (compared lower-cased (ASCII), runs of
 * whitespace as one space). */
#define VD_LINT_SHARED_MIN 24

/* Whether a and b share a run of at least `min` bytes once both are lower-cased (ASCII) and
 * their runs of whitespace made one space; byte-wise, so any language and script. NULL or
 * shorter texts never do. Linear in the two lengths (rolling hashes). Pure. */
bool vd_lint_shares_span(const char *a, const char *b, size_t min);

/* Whether text restates the tool failure whose error text is `error`: a shared run of
 * VD_LINT_SHARED_MIN bytes, or (vd_lint_same_template) the failure's template. Pure. */
bool vd_lint_restates_failure(const char *text, const char *error);

/* The fewest constant words a template needs before text that mines to it reads as that
 * failure ("Article is <*>" is too generic; "Invalid post ID <num>" is not). */
#define VD_LINT_TEMPLATE_WORDS 3

/* Whether text mines to the template of the tool failure whose error text is `error`
 * (templates.h: the same tokeniser, masks, shape and similarity as the server's miner), as a
 * whole or in any run of its tokens as long as the error (the error quoted amid other words),
 * and that template keeps at least VD_LINT_TEMPLATE_WORDS constant words. So the error's text
 * with other ids, numbers, quoted values or a reworded variable part restates it, in any
 * language the error is written in. NULL or "" is false. Pure. */
bool vd_lint_same_template(const char *text, const char *error);

/* What the lint knows of one rejection (read inside the finishing transaction). */
typedef struct vd_lint_input {
    const char *reason;          /* the call's reason text, or NULL */
    bool force;                  /* the caller insists */
    bool deterministic_failure;  /* the job recorded a deterministic tool failure */
    bool retriable_adjudication; /* the job's last adjudication was `retriable` */
    bool strict_evidence;        /* the flow step's strict mode */
    bool has_evidence;           /* the call sent `evidence` */
    bool evidence_found;         /* ... and it is quoted from the item's payload */
    const char *evidence;        /* the evidence text, or NULL */
    bool code_other;             /* reason_code is `other`: evidence (or force) is required */
    const char *const *failures; /* the error texts of the item's tool failures (newest first) */
    size_t n_failures;
    bool incident_open; /* a tooling incident is open in the item's flow step */
} vd_lint_input;

/* The signal of tooling words in a reason that nothing on the record backs (accepted). */
#define VD_LINT_SIGNAL_WORDS "tooling_words"

typedef struct vd_lint_verdict {
    vd_error rc;        /* VD_OK, VD_ERR_MISSING_FIELD (evidence), VD_ERR_EVIDENCE_NOT_FOUND,
                           VD_ERR_REJECTION_SUSPECT */
    const char *field;  /* the field a refusal names (static), or NULL */
    const char *why;    /* a sentence on why (static), or NULL */
    bool overridden;    /* force let through a rejection the lint would have refused */
    const char *signal; /* on VD_OK: VD_LINT_SIGNAL_WORDS when the reason reads like a
                           tooling failure but the record holds no tool failure and no
                           incident is open (accepted: word lists never decide alone) */
} vd_lint_verdict;

/* Judge one rejection. Strict evidence is checked first and is not waived by force (a
 * rejection in strict mode always quotes the payload); then the suspicions (the reason or
 * evidence restates one of the item's tool failures, tooling words in the reason backed by
 * a tool failure on the item's record or an open incident, a deterministic tool failure, a
 * retriable adjudication), which force overrides
 * (verdict.overridden); then reason_code `other` without evidence quoted from the payload
 * (waived by force). Pure. */
vd_lint_verdict vd_lint_judge(const vd_lint_input *in);

#endif
