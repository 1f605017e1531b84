/* incidents.h - tooling incidents: the same deterministic tool failure on
 * many items of a flow step is a tooling bug, not a problem with the sources. A failure's key
 * is (flow step, its failure template: templates.h), whichever tools it came through; an
 * incident opens when one template reaches the flow step's incident_min_items distinct items
 * within incident_window_minutes. While it is open, tool-failure envelopes say so and reject_source
 * in that flow step needs force. */
#ifndef VERDICT_INCIDENTS_H
#define VERDICT_INCIDENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict/error.h"
#include "verdict/store.h"
#include "verdict/store/incidents.h"

/* The longest signature kept (bytes, without the NUL). */
#define VD_SIGNATURE_MAX 500

/* Normalise an error text into buf (n bytes, NUL-terminated; n >= 1): URLs become <url>, file
 * paths <path>, quoted values ('…' opened at a word start, "…", `…`) <q>, UUIDs <id>, hex
 * hashes (8+ hex digits with a digit and a letter, or 0x…) <hex>, numbers <n>; runs of
 * whitespace become one space, none at either end. At most VD_SIGNATURE_MAX bytes are
 * written, cut at a UTF-8 character boundary. Returns the length written. Pure. */
size_t vd_tool_signature(const char *error, char *buf, size_t n);

/* The hint of a tool-failure envelope while `inc` is open in the flow step (buf, n bytes).
 * Pure. */
void vd_incident_hint(const vd_incident_ref *inc, char *buf, size_t n);

/* Inside the tool-failure transaction, after the failure row (with its template) is
 * written: for a failure that counts, open the incident of (flow_step_id, template_id) when
 * its distinct items in the window reach the flow step's minimum (and pause the flow step when
 * it says so), or link the item and the tool to the incident already open; *own receives that
 * incident's id (0: none). Then, for every failure, *open receives the incident open in the
 * flow step (one of this tool first; the template's own when it counted), id 0 when none.
 * template_text names the incident. known: the template's incident open when the templates
 * were read (0: none): a counting failure links to it in one statement. */
typedef struct vd_incident_failure {
    const char *flow_step_id, *tool, *template_text, *sample_error;
    int64_t item_id, template_id, known;
    bool counts;
} vd_incident_failure;
VD_MUST_USE vd_error vd_incident_note(vd_conn *c, const vd_incident_failure *f, int64_t *own,
                                      vd_incident_ref *open);

/* Resolve incident id in one transaction: state resolved (by actor, with reason: may be NULL),
 * and with requeue every linked item that is deferred, failed, manual_review or rejected and
 * every item of its flow step rejected while it was open goes back to available (one requeue
 * transition each). *out: {"tool_incident": {...}, "requeued": [ids]} (malloc'd).
 * VD_ERR_NOT_FOUND; VD_ERR_INVALID_TRANSITION when it is resolved already. */
VD_MUST_USE vd_error vd_incident_resolve(vd_conn *conn, int64_t id, bool requeue,
                                         const char *reason, const char *actor, char **out);

#endif
