/* redact.h - the one redactor: a table of PCRE2 patterns for credentials in free text
 * (key=value parameters, JSON members, HTTP headers, URL user:password, provider key shapes)
 * and the rule for which JSON keys name a secret. Every text verdict stores or logs passes
 * through it. Thread-safe: the patterns are compiled once and shared read-only.
 */
#ifndef VERDICT_REDACT_H
#define VERDICT_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#include "verdict/error.h"

/* The mask written in place of a secret. */
#define VD_REDACTED "[REDACTED]"

/* A copy of s with every credential the pattern table recognises replaced by "[REDACTED]".
 * Idempotent: vd_redact(vd_redact(s)) equals vd_redact(s). Returns a malloc'd string the
 * caller frees, or NULL on allocation failure. */
VD_MUST_USE char *vd_redact(const char *s);

/* Whether a JSON member named `key` holds a secret (password, secret, token, api_key,
 * client_secret, authorization, ... alone or as the last part of a longer key such as
 * wp_password or access_token). Words such as "tokens" or "max_tokens" are not secrets. */
bool vd_redact_is_secret_key(const char *key);

/* The number of rows in the pattern table, and the name of row i (tests, README). */
size_t vd_redact_pattern_count(void);
const char *vd_redact_pattern_name(size_t i);

#endif
