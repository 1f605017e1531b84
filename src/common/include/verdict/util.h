/* util.h - small, dependency-free helpers shared by every layer: randomness, constant-time
 * comparison, UTF-8 validation and the JSON access/event log (redacted: redact.h).
 * All functions are thread-safe.
 */
#ifndef VERDICT_UTIL_H
#define VERDICT_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict/config.h"
#include "verdict/redact.h"

/* Fill buf with len cryptographically random bytes (getrandom). */
void vd_random_bytes(void *buf, size_t len);
/* A uniformly random double in [0, 1). */
double vd_random_unit(void);
/* Write `bytes` random bytes as lower-case hex plus NUL into out (2*bytes+1 bytes). */
void vd_random_hex(char *out, size_t bytes);

/* Constant-time equality of two NUL-terminated strings: the time depends only on the
 * length of `secret`, never on where the strings differ. */
bool vd_ct_streq(const char *given, const char *secret);

/* The one parse of a decimal integer that comes from outside (a header, a path, a query, the
 * configuration): s[0..len) is an optional '-' and 1 or more ASCII digits, nothing else (no
 * blanks, no '+'), whose value is within [min, max]. Overflow is detected before it happens,
 * never computed. On success *out is the value; otherwise false and *out untouched. Pure. */
bool vd_parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out);

/* Whether s[0..len) is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool vd_utf8_valid(const char *s, size_t len);
/* Copy the NUL-terminated src into dst (cap bytes, always terminated), writing each byte
 * that is not part of well-formed UTF-8 as the four characters \xNN; the copy is cut at a
 * character boundary when it does not fit. For messages that echo caller bytes. */
void vd_utf8_scrub(char *dst, size_t cap, const char *src);
/* Number of code points in valid UTF-8 s[0..len). */
size_t vd_utf8_count(const char *s, size_t len);

/* Current wall-clock time as RFC 3339 UTC with milliseconds into out (>= 32 bytes). */
void vd_now_rfc3339(char *out, size_t len);
/* Monotonic clock in seconds. */
double vd_monotonic(void);
/* Every timed wait of verdict: a condition variable made by vd_cond_init measures its
 * deadlines on CLOCK_MONOTONIC, so a step of the wall clock (NTP, an operator, a VM resumed)
 * neither stalls nor hurries a wait. vd_cond_wait_until waits on cv (mu held) until it is
 * signalled or the vd_monotonic() deadline passes; false when the deadline passed. Spurious
 * wake-ups return true too: callers re-check their predicate, as with pthread_cond_wait. */
int vd_cond_init(pthread_cond_t *cv);
bool vd_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline);

/* Logging: one JSON object per line on stderr. `fields` is a pre-rendered JSON fragment
 * (`"k":v,...`, no braces) or NULL; msg is escaped; both are
 * redacted (vd_redact). Lines below the level are dropped. */
void vd_log_set_level(vd_log_level level);
bool vd_log_enabled(vd_log_level level);
void vd_log(vd_log_level level, const char *msg, const char *fields);
/* printf-style convenience: the message is formatted, redacted and escaped. */
void vd_logf(vd_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append s JSON-escaped (without quotes) to out[0..cap), keeping it NUL-terminated.
 * Returns the number of bytes now used. */
size_t vd_json_escape(char *out, size_t cap, size_t used, const char *s);

#endif
