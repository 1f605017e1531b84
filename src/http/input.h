/* input.h - the pure parsers of what a request carries outside its body (input.c): the
 * Verdict-Claim header, UUIDs, percent-decoding of the path and query (libmicrohttpd's unescape
 * callback) and the control-byte test every path segment and query value passes. No I/O, no
 * libmicrohttpd: the fuzz targets (tests/fuzz) link this file alone. */
#ifndef VERDICT_HTTP_INPUT_H
#define VERDICT_HTTP_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the largest id a path or header names: 18 digits (a job id, an item id) */
#define VD_MAX_ID 999999999999999999LL
/* a UUID in text form and its NUL */
#define VD_UUID_SIZE 37

/* Whether s is a UUID in text form (8-4-4-4-12 hex digits). */
bool vd_is_uuid(const char *s);
/* Verdict-Claim: "<job_id>:<claim_token>": a positive job id of at most 18 digits without a
 * leading zero (vd_parse_i64), ':' and a UUID. On success *job and token (VD_UUID_SIZE bytes)
 * are set; otherwise false and they are untouched. */
bool vd_claim_header_parse(const char *h, int64_t *job, char token[VD_UUID_SIZE]);
/* Percent-decode s in place as libmicrohttpd does (a '%' without two hex digits stays as it
 * is) and return the new length; a decoded NUL byte becomes 0x7F, so that it cannot cut the
 * text short and is refused like every other control byte (vd_has_control). */
size_t vd_url_unescape(char *s);
/* Whether s holds a control byte: 0x01-0x1F or 0x7F (a NUL ends it). */
bool vd_has_control(const char *s);

#endif
