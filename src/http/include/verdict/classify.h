/* classify.h - `verdictd classify`: read failures as JSON lines on a stream and answer how
 * the server reads each one (class, template id and text, why), with the server's own
 * template miner and classifier over an in-memory template store of one flow step. */
#ifndef VERDICT_CLASSIFY_H
#define VERDICT_CLASSIFY_H

#include <stdio.h>

/* One line in, {"tool", "error", "kind"?}, one line out, in order:
 * {"class", "template_id", "template", "why"}; a bad line answers {"error": "..."} and the run
 * goes on. Every line is read as a failure of one job, so a template's second failure is a
 * recurrence. Returns 0, or 1 when a line was refused, 2 on an I/O error. Borrows in and out. */
int vd_classify_run(FILE *in, FILE *out);

#endif
