/* json_scan.h - the one strict JSON scanner (RFC 8259), shared by the request-body parser
 * (src/http/json_in.c) and the session adjudicator (src/service/adjudicator.c): it decides
 * whether text is JSON before cJSON (which is lenient) reads it, so verdict never reads a
 * document differently from PHP's json_decode, Node's JSON.parse or PostgreSQL's jsonb.
 * Pure and thread-safe; allocates only while checking duplicate keys.
 */
#ifndef VERDICT_JSON_SCAN_H
#define VERDICT_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>

/* Always refused: anything outside the grammar (leading zeros, NaN, trailing commas, single
 * quotes, bytes after the value), raw control characters in strings, "\u0000", unpaired
 * surrogate escapes, nesting deeper than max_depth. The flags add: */
enum {
    VD_JSON_NO_DUPLICATE_KEYS = 1u << 0, /* a key twice in one object (after unescaping) */
    VD_JSON_FINITE_NUMBERS = 1u << 1,    /* a number beyond a double's range (1e999) */
    VD_JSON_OBJECT_ONLY = 1u << 2,       /* the value must be an object */
    VD_JSON_STRICT = VD_JSON_NO_DUPLICATE_KEYS | VD_JSON_FINITE_NUMBERS,
};

/* Why text was refused: the byte offset, the field it concerns in the path syntax of 400
 * answers ("items[2].priority"; "" when no field applies) and a message naming the rule. */
typedef struct vd_json_problem {
    size_t offset;
    char field[200];
    char message[200];
} vd_json_problem;

/* Whether text[0..len) is exactly one JSON value (surrounding whitespace allowed) under the
 * rules above. On false, *why (may be NULL) says why. text need not be NUL-terminated. */
bool vd_json_check(const char *text, size_t len, int max_depth, unsigned flags,
                   vd_json_problem *why);

#endif
