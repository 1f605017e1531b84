/* templates.h - failure templates: an online template miner in the class of the published log
 * parsers (Drain: a fixed-depth tree by token count and leading token, a similarity threshold,
 * positions that vary become <*>), and classification of a failure by the evidence in its
 * template's constant tokens. Everything here is pure; the server keeps a flow step's
 * templates in PostgreSQL (tool_failures.c), `verdictd classify` in memory (vd_tpl_mem). */
#ifndef VERDICT_TEMPLATES_H
#define VERDICT_TEMPLATES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "verdict/error.h"

/* Tokens kept of one message; a longer message ends in one <*>. */
#define VD_TPL_TOKENS 96
/* The longest template text (bytes, without the NUL). */
#define VD_TPL_TEXT_MAX 1023
/* The longest shape key ("<token count> <leading token>"). */
#define VD_TPL_SHAPE_MAX 80
/* Two texts of one shape share a template when this share of their tokens agree. */
#define VD_TPL_SIMILARITY 0.5

/* One message, tokenised and masked: tok[i] is the template token (a constant word, a
 * punctuation mark, a JSON key or code string, or a mask such as <num>, <q>, <path>, <url>,
 * <*>), raw[i] / raw_len[i] the text it came from (borrowed from the message). */
typedef struct vd_tpl_msg {
    int n;
    const char *tok[VD_TPL_TOKENS];
    const char *raw[VD_TPL_TOKENS];
    size_t raw_len[VD_TPL_TOKENS];
    char store[VD_TPL_TEXT_MAX + 1]; /* the tokens' text: rendered, at most VD_TPL_TEXT_MAX bytes */
} vd_tpl_msg;

/* Tokenise and mask `text` into m (text is borrowed and must outlive m). Masks: URLs <url>,
 * paths <path>, quoted values <q>, numbers <num>, any other token with a digit (hex, UUIDs,
 * IPs, durations such as 1.2s, ids such as req_9f3ac2, git hashes) <*>. A JSON body is read
 * as such: keys and short code strings (the value of a key such as "code", "type" or
 * "error") stay constants, other values are variables. Pure. */
void vd_tpl_parse(const char *text, vd_tpl_msg *m);

/* m's own template text (tokens joined by one space) into buf (n bytes). Pure. */
void vd_tpl_render(const vd_tpl_msg *m, char *buf, size_t n);

/* The tree path of m: "<token count> <leading token, or <*> when it is a mask>" (buf, n). */
void vd_tpl_shape(const vd_tpl_msg *m, char *buf, size_t n);

/* How alike template text t and m are: the share of m's non-punctuation tokens equal to t's
 * (a <*> in t matches anything: Drain's "include parameters" reading, so a template that has
 * learnt its variables keeps accepting them); -1 when they differ in token count, in a
 * punctuation mark or in a JSON key or code string (those never merge). Pure. */
double vd_tpl_similarity(const char *t, const vd_tpl_msg *m);

/* t merged with m into buf (n bytes): each position where they differ becomes <*>. */
void vd_tpl_merge(const char *t, const vd_tpl_msg *m, char *buf, size_t n);

/* The index among templates[0..count) (one shape's) that m joins, or -1 when it starts a new
 * one: the most similar at or above VD_TPL_SIMILARITY (the earlier one on a tie) whose merge
 * with m keeps the evidence class (vd_tpl_classify) of both: a merge never erases evidence,
 * so "connection reset" and "connection refused" stay apart. merged (n bytes) receives the
 * template after the join (m's own when -1). Pure. */
int vd_tpl_choose(const char *const *templates, size_t count, const vd_tpl_msg *m, char *merged,
                  size_t n);

typedef enum vd_tpl_class {
    VD_TPL_NONE = 0, /* no evidence either way (read as deterministic) */
    VD_TPL_DETERMINISTIC,
    VD_TPL_TRANSIENT
} vd_tpl_class;

/* Classify m by the evidence in template t (m's own template when t is NULL): deterministic
 * markers (invalid, must, not found, does not exist, schema, undefined, permission, content
 * policy, refused by safety, ... and their common non-English forms) among t's constant
 * tokens outrank transient ones (timeout, rate limit, too many requests, overloaded,
 * temporarily, unavailable, connection refused or reset, ...); a status code counts only in
 * status position ("HTTP 503", "status: 429", "503 Service Unavailable", "upstream 502") —
 * 429, 502, 503, 504 transient, other 4xx deterministic. A word or number inside an argument,
 * id, path or quoted value is masked and never evidence. why (n bytes) says what decided. */
vd_tpl_class vd_tpl_classify(const char *t, const vd_tpl_msg *m, char *why, size_t n);

/* An in-memory template store of one flow step (`verdictd classify`, the unit tests). */
typedef struct vd_tpl_mem {
    size_t n, cap;
    char **text;  /* malloc'd */
    char **shape; /* malloc'd */
} vd_tpl_mem;

void vd_tpl_mem_init(vd_tpl_mem *s);
void vd_tpl_mem_cleanup(vd_tpl_mem *s);
/* Join m to its template in s or start one; *id receives its 1-based id and text (n bytes)
 * the template after the join. false when out of memory. */
bool vd_tpl_mem_add(vd_tpl_mem *s, const vd_tpl_msg *m, int64_t *id, char *text, size_t n);

#endif
