/* templates.c - the failure-template miner (see templates.h): tokenise and mask an error text,
 * JSON bodies included; match it to the most similar template of its shape (token count and
 * leading token, as in Drain) or start one; merge, so that positions that vary become <*>.
 * Pure: no database, no HTTP. The evidence classifier is in template_class.c. */
#include "verdict/templates.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template_internal.h"

static const char *const masks[] = {"<*>", "<num>", "<q>", "<path>", "<url>"};

bool vd_tpl_is_mask(const char *t, size_t n)
{
    for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
        if (strlen(masks[i]) == n && memcmp(t, masks[i], n) == 0)
            return true;
    }
    return false;
}

bool vd_tpl_is_punct(const char *t, size_t n)
{
    return n == 1 && strchr("{}[](),;=:\"", t[0]) != NULL;
}

typedef struct lex {
    const char *p;
    vd_tpl_msg *m;
    size_t used;
    const char *key; /* the last JSON key, while it or its ':' is the previous token */
    size_t key_len;
    int key_state; /* 1: a key was the previous token; 2: its ':' was */
} lex;

/* Keys whose short values are codes (constants), not data. */
static bool code_key(const char *k, size_t n)
{
    static const char *const keys[] = {"code",       "error",     "error_code", "errorcode", "type",
                                       "status",     "reason",    "kind",       "errno",     "err",
                                       "error_type", "errortype", "sqlstate",   "sql_state"};
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        if (strlen(keys[i]) == n && strncasecmp(k, keys[i], n) == 0)
            return true;
    }
    return false;
}

static bool code_like(const char *s, size_t n)
{
    if (n == 0 || n > 64 || !isalpha((unsigned char)s[0]))
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isalnum((unsigned char)s[i]) && !strchr("_.:-", s[i]))
            return false;
    }
    return true;
}

/* Append one token (tok, tn) that came from raw [raw, raw + rn). The last slot and the last
 * bytes of the store are kept for one final <*> that stands for the rest of the text. */
static bool emit(lex *l, const char *raw, size_t rn, const char *tok, size_t tn)
{
    vd_tpl_msg *m = l->m;
    bool last = m->n >= VD_TPL_TOKENS - 1 || l->used + tn + 1 + 4 > sizeof(m->store);
    if (last) {
        tok = "<*>";
        tn = 3;
        rn = strlen(raw);
    }
    char *dst = m->store + l->used;
    for (size_t i = 0; i < tn; i++)
        dst[i] = isspace((unsigned char)tok[i]) ? '_' : tok[i];
    dst[tn] = '\0';
    m->tok[m->n] = dst;
    m->raw[m->n] = raw;
    m->raw_len[m->n] = rn;
    m->n++;
    l->used += tn + 1;
    if (last)
        l->p = raw + rn;
    return !last;
}

static bool is_word_byte(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* A "…" string at s (JSON escapes honoured): its length with both quotes, 0 when unclosed. */
static size_t dquote_len(const char *s)
{
    for (size_t i = 1; s[i]; i++) {
        if (s[i] == '\\' && s[i + 1])
            i++;
        else if (s[i] == '"')
            return i + 1;
    }
    return 0;
}

static const struct {
    const char *open, *close;
} quote_pairs[] = {{"'", "'"},
                   {"`", "`"},
                   {"\xE2\x80\x9C", "\xE2\x80\x9D"},  /* “ ” */
                   {"\xE2\x80\x98", "\xE2\x80\x99"},  /* ‘ ’ */
                   {"\xC2\xAB", "\xC2\xBB"},          /* « » */
                   {"\xE2\x80\x9E", "\xE2\x80\x9C"},  /* „ “ */
                   {"\xE3\x80\x8C", "\xE3\x80\x8D"},  /* 「 」 */
                   {"\xE3\x80\x8E", "\xE3\x80\x8F"}}; /* 『 』 */

/* Which quote_pairs entry opens at s (-1: none). */
static int quote_open(const char *s)
{
    for (size_t i = 0; i < sizeof(quote_pairs) / sizeof(quote_pairs[0]); i++) {
        if (strncmp(s, quote_pairs[i].open, strlen(quote_pairs[i].open)) == 0)
            return (int)i;
    }
    return -1;
}

/* A quoted value other than "…" at s: its length with both quotes on one line, or 0. An ASCII
 * quote opens only at a word start and closes before a non-word byte (so "can't" stays). */
static size_t quote_len(const char *s, bool word_start)
{
    int k = quote_open(s);
    if (k < 0 || (k < 2 && !word_start))
        return 0;
    size_t o = strlen(quote_pairs[k].open), c = strlen(quote_pairs[k].close);
    for (size_t i = o; s[i] && s[i] != '\n'; i++) {
        if (strncmp(s + i, quote_pairs[k].close, c) == 0 && (k >= 2 || !is_word_byte(s[i + c])))
            return i + c;
    }
    return 0;
}

/* A "…" token: a JSON key (followed by ':'), a code string (the short value of a code key),
 * or a quoted value <q>. */
static bool lex_dquote(lex *l, size_t n)
{
    const char *s = l->p, *after = s + n;
    while (*after == ' ' || *after == '\t')
        after++;
    l->p = s + n;
    if (*after == ':') {
        bool ok = emit(l, s, n, s, n);
        l->key = s + 1;
        l->key_len = n - 2;
        l->key_state = 1;
        return ok;
    }
    if (l->key_state == 2 && code_key(l->key, l->key_len) && code_like(s + 1, n - 2)) {
        l->key_state = 0;
        return emit(l, s, n, s, n);
    }
    l->key_state = 0;
    return emit(l, s, n, "<q>", 3);
}

static bool url_at(const char *s)
{
    size_t i = 0;
    while (isalpha((unsigned char)s[i]) || (i > 0 && (s[i] == '+' || s[i] == '-')))
        i++;
    return i > 1 && strncmp(s + i, "://", 3) == 0;
}

static bool path_at(const char *s)
{
    if (s[0] == '/' && s[1] && !isspace((unsigned char)s[1]))
        return true;
    if ((s[0] == '~' && s[1] == '/') || strncmp(s, "./", 2) == 0 || strncmp(s, "../", 3) == 0)
        return true;
    return isalpha((unsigned char)s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/');
}

/* A URL or an absolute / relative path: up to white space, a quote or a closing bracket,
 * without trailing punctuation. */
static size_t locator_len(const char *s)
{
    size_t n = 0;
    while (s[n] && !isspace((unsigned char)s[n]) && !strchr("\"'`<>)]},;", s[n]))
        n++;
    while (n > 1 && strchr(".:!?", s[n - 1]))
        n--;
    return n;
}

static bool word_end(const char *s)
{
    if (!*s || isspace((unsigned char)*s) || strchr("{}[](),;=\"", *s) || quote_open(s) >= 2)
        return true;
    return *s == ':' && (!s[1] || isspace((unsigned char)s[1]) || isdigit((unsigned char)s[1]) ||
                         strchr("{}[](),;=\"'", s[1]));
}

static bool is_number(const char *s, size_t n)
{
    size_t i = s[0] == '-' || s[0] == '+' ? 1 : 0;
    if (i >= n || !isdigit((unsigned char)s[i]))
        return false;
    for (; i < n; i++) {
        bool sep = (s[i] == '.' || s[i] == ',') && i + 1 < n && isdigit((unsigned char)s[i + 1]);
        if (!isdigit((unsigned char)s[i]) && !sep)
            return false;
    }
    return true;
}

/* The template token of a bare word: <num>, <*> for any other word with a digit (hex, UUID,
 * IP, 1.2s, req_9f3ac2, a git hash), an e-mail address or an overlong word, <path> for a
 * dir/file.ext word; else the word itself. */
static const char *mask_word(const char *s, size_t n)
{
    bool digit = false, at = false, dot = false, slash = false;
    for (size_t i = 0; i < n; i++) {
        digit |= isdigit((unsigned char)s[i]) != 0;
        at |= s[i] == '@';
        dot |= s[i] == '.';
        slash |= i > 0 && i + 1 < n && (s[i] == '/' || s[i] == '\\');
    }
    if (digit)
        return is_number(s, n) ? "<num>" : "<*>";
    if (n > 64 || (at && dot))
        return "<*>";
    return slash && dot ? "<path>" : NULL;
}

static bool lex_punct(lex *l)
{
    const char *s = l->p;
    l->key_state = *s == ':' && l->key_state == 1 ? 2 : 0;
    l->p++;
    return emit(l, s, 1, s, 1);
}

static bool lex_word(lex *l)
{
    const char *s = l->p;
    size_t n = 0, k;
    while (!word_end(s + n))
        n++;
    if (n == 0) /* an opening quote that never closes: one character */
        for (n = 1; ((unsigned char)s[n] & 0xC0) == 0x80; n++)
            ;
    l->p = s + n;
    l->key_state = 0;
    for (k = n; k > 0 && strchr(".!?", s[k - 1]); k--)
        ;
    if (k == 0) /* "..." alone says nothing */
        return true;
    const char *mask = mask_word(s, k);
    return mask ? emit(l, s, n, mask, strlen(mask)) : emit(l, s, n, s, k);
}

static bool lex_one(lex *l, const char *start)
{
    const char *s = l->p;
    size_t n;
    if (isspace((unsigned char)*s)) {
        l->p++;
        return true;
    }
    n = *s == '"' ? dquote_len(s) : 0;
    if (n)
        return lex_dquote(l, n);
    n = quote_len(s, s == start || !is_word_byte(s[-1]));
    if (n) {
        l->p = s + n;
        l->key_state = 0;
        return emit(l, s, n, "<q>", 3);
    }
    if (strchr("{}[](),;=\"", *s) || (*s == ':' && word_end(s)))
        return lex_punct(l);
    if (url_at(s) || path_at(s)) {
        bool url = url_at(s);
        n = locator_len(s);
        l->p = s + (n ? n : 1);
        l->key_state = 0;
        return url ? emit(l, s, n, "<url>", 5) : emit(l, s, n, "<path>", 6);
    }
    return lex_word(l);
}

void vd_tpl_parse(const char *text, vd_tpl_msg *m)
{
    lex l = {text ? text : "", m, 0, NULL, 0, 0};
    m->n = 0;
    while (*l.p && lex_one(&l, text))
        ;
}

void vd_tpl_render(const vd_tpl_msg *m, char *buf, size_t n)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->n && len < n; i++) {
        int w = snprintf(buf + len, n - len, "%s%s", i ? " " : "", m->tok[i]);
        len += w > 0 ? (size_t)w : 0;
    }
}

void vd_tpl_shape(const vd_tpl_msg *m, char *buf, size_t n)
{
    const char *lead = m->n ? m->tok[0] : "";
    if (vd_tpl_is_mask(lead, strlen(lead)) || strlen(lead) > 64) /* a long JSON key */
        lead = "<*>";
    snprintf(buf, n, "%d %s", m->n, lead);
}

/* The next token of template text at *p: its start and length; *p moves past it. NULL at
 * the end. */
static const char *next_tok(const char **p, size_t *n)
{
    const char *s = *p, *e = NULL;
    if (!s)
        return NULL;
    e = strchr(s, ' ');
    *n = e ? (size_t)(e - s) : strlen(s);
    *p = e ? e + 1 : NULL;
    return s;
}

double vd_tpl_similarity(const char *t, const vd_tpl_msg *m)
{
    int i = 0, words = 0, same = 0;
    size_t n = 0;
    if (m->n == 0)
        return t[0] ? -1 : 1.0;
    for (const char *p = t, *s = next_tok(&p, &n); s; s = next_tok(&p, &n), i++) {
        const char *w = i < m->n ? m->tok[i] : NULL;
        if (!w)
            return -1;
        bool eq = strlen(w) == n && memcmp(w, s, n) == 0;
        if (vd_tpl_is_punct(w, strlen(w)) || w[0] == '"' || s[0] == '"') {
            if (!eq)
                return -1; /* punctuation, JSON keys and codes never merge */
            continue;
        }
        words++;
        same += eq || (n == 3 && memcmp(s, "<*>", 3) == 0);
    }
    if (i != m->n)
        return -1;
    return words ? (double)same / words : 1.0;
}

void vd_tpl_merge(const char *t, const vd_tpl_msg *m, char *buf, size_t n)
{
    size_t len = 0, k = 0;
    int i = 0;
    buf[0] = '\0';
    for (const char *p = t, *s = next_tok(&p, &k); s && i < m->n; s = next_tok(&p, &k), i++) {
        bool eq = strlen(m->tok[i]) == k && memcmp(m->tok[i], s, k) == 0;
        int w =
            snprintf(buf + len, n - len, "%s%.*s", i ? " " : "", eq ? (int)k : 3, eq ? s : "<*>");
        len += w > 0 ? (size_t)w : 0;
        if (len >= n)
            break;
    }
}

/* Whether merging t with m into merged keeps the evidence class of both (own: m's). */
static bool keeps_evidence(const char *t, const vd_tpl_msg *m, const char *merged, vd_tpl_class own)
{
    char why[200];
    return vd_tpl_classify(t, m, why, sizeof(why)) == own &&
           (strcmp(t, merged) == 0 || vd_tpl_classify(merged, m, why, sizeof(why)) == own);
}

int vd_tpl_choose(const char *const *templates, size_t count, const vd_tpl_msg *m, char *merged,
                  size_t n)
{
    double last = 2.0;
    size_t last_i = 0;
    char why[200];
    vd_tpl_class own = count ? vd_tpl_classify(NULL, m, why, sizeof(why)) : VD_TPL_NONE;
    for (int tries = 0; tries < 4; tries++) { /* the best, then the next best, ... */
        int best = -1;
        double top = VD_TPL_SIMILARITY;
        for (size_t i = 0; i < count; i++) {
            double s = vd_tpl_similarity(templates[i], m);
            bool tried = s > last || (s == last && i <= last_i);
            if (!tried && s >= top && (best < 0 || s > top)) {
                best = (int)i;
                top = s;
            }
        }
        if (best < 0)
            break;
        vd_tpl_merge(templates[best], m, merged, n);
        if (keeps_evidence(templates[best], m, merged, own))
            return best;
        last = top;
        last_i = (size_t)best;
    }
    vd_tpl_render(m, merged, n);
    return -1;
}

void vd_tpl_mem_init(vd_tpl_mem *s)
{
    memset(s, 0, sizeof(*s));
}

void vd_tpl_mem_cleanup(vd_tpl_mem *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->text[i]);
        free(s->shape[i]);
    }
    free(s->text);
    free(s->shape);
    memset(s, 0, sizeof(*s));
}

static bool mem_grow(vd_tpl_mem *s)
{
    size_t cap = s->cap ? s->cap * 2 : 16;
    char **t = realloc(s->text, cap * sizeof(*t));
    if (!t)
        return false;
    s->text = t;
    t = realloc(s->shape, cap * sizeof(*t));
    if (!t)
        return false;
    s->shape = t;
    s->cap = cap;
    return true;
}

bool vd_tpl_mem_add(vd_tpl_mem *s, const vd_tpl_msg *m, int64_t *id, char *text, size_t n)
{
    char shape[VD_TPL_SHAPE_MAX + 1], merged[VD_TPL_TEXT_MAX + 1];
    const char **leaf = malloc((s->n + 1) * sizeof(*leaf));
    size_t *at = malloc((s->n + 1) * sizeof(*at)), k = 0;
    bool ok = leaf && at;
    vd_tpl_shape(m, shape, sizeof(shape));
    for (size_t i = 0; ok && i < s->n; i++) { /* the tree's leaf: the templates of this shape */
        if (strcmp(s->shape[i], shape) == 0) {
            leaf[k] = s->text[i];
            at[k++] = i;
        }
    }
    int best = ok ? vd_tpl_choose(leaf, k, m, merged, sizeof(merged)) : -1;
    size_t slot = best >= 0 ? at[best] : s->n;
    free(leaf);
    free(at);
    if (!ok || (best < 0 && s->n == s->cap && !mem_grow(s)))
        return false;
    char *dup = strdup(merged), *sh = best < 0 ? strdup(shape) : NULL;
    if (!dup || (best < 0 && !sh)) {
        free(dup);
        free(sh);
        return false;
    }
    if (best >= 0) {
        free(s->text[slot]);
    } else {
        s->shape[slot] = sh;
        s->n++;
    }
    s->text[slot] = dup;
    *id = (int64_t)slot + 1;
    snprintf(text, n, "%s", dup);
    return true;
}
