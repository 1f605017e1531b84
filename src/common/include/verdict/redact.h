/* redact.h - the one redactor: a table of PCRE2 patterns for credentials in free text
 * (key=value and key: value pairs, URL-encoded pairs, command-line flags, JSON/XML members,
 * HTTP headers and cookies, URL user:password, bearer/basic credentials, provider key shapes)
 * and the rule for which names (JSON keys, flags, headers, parameters) name a secret. Every
 * text verdict stores or logs passes through it. Thread-safe: the patterns are compiled once
 * and shared read-only.
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

/* Whether a name (a JSON key, a flag, a header, a parameter) holds a secret. The name is split
 * into words (at -, _, ., other punctuation, camelCase and digits; case-insensitive); it is a
 * secret when one word is password, passwd, pwd, passphrase, passcode, secret(s), token, key,
 * apikey, auth(n/z), authorization, authentication, cookie(s), session, sessionid, sessid,
 * sig, signature, credential(s), creds, privatekey, accesskey, secretkey, bearer or jwt, or
 * ends with one of the longer ones (pgpassword, csrftoken, jsessionid, oauth) - unless the
 * next word describes it (token_count, password_hint, key_file, session_ttl: count, used,
 * limit, length, type, name, expires, ttl, hint, url, path, file, ...), the word before counts
 * it (max_token), or the first word is "no". So "tokens_used", "max_tokens", "keyword",
 * "author" and "design" are not secrets; "sessionId", "PRIVATE-TOKEN" and "AccountKey" are. */
bool vd_redact_is_secret_key(const char *key);

/* The number of rows in the pattern table, and the name of row i (tests, README). */
size_t vd_redact_pattern_count(void);
const char *vd_redact_pattern_name(size_t i);
/* Whether row i compiled (tests). */
bool vd_redact_pattern_compiles(size_t i);

#endif
