/* template_class.c - classify a failure by the evidence in its template (templates.h): only
 * the template's constant tokens are read (masked arguments, ids, paths and quoted values
 * never count), a status code counts only in status position, and a deterministic marker
 * outranks a transient one. Pure: no database, no HTTP. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "template_internal.h"
#include "verdict/templates.h"

/* A needle ending in '*' matches as a prefix; ASCII needles match whole words. */
static const char *const det_markers[] = {
    "invalid", "must", "not found", "does not exist", "doesn't exist", "no such", "schema",
    "undefined", "is not defined", "permission*", "content polic*", "usage polic*",
    "policy violation", "violat*", "refused by safety", "safety system", "refused to", "refusal",
    "forbidden", "not permitted", "not allowed", "unauthori*", "denied", "blocked by", "declined",
    "moderation", "content filter", "flagged", "unknown", "missing", "required", "cannot", "can't",
    "syntax error", "parse error", "unsupported", "not supported", "malformed", "bad request",
    "unprocessable", "duplicate", "already exists", "too long", "too large", "exceeds",
    "not a function", "typeerror", "no method", "insufficient quota",
    /* the same in other languages (prefixes where words inflect) */
    "ungültig*", "nicht gefunden", "existiert nicht", "muss", "unzulässig*", "nicht erlaubt",
    "keine berechtigung", "invalide", "introuvable", "n'existe pas", "doit", "non valide",
    "non autorisé", "inválid*", "no encontrad*", "no existe", "debe", "no permitid*", "non trovat*",
    "non esiste", "non valid*", "deve", "не найден*", "не существует", "недопустим*", "неверн*",
    "должен*", "запрещ*", "見つかりません", "存在しません", "無効", "不正", "権限", "找不到",
    "不存在", "无效", "必须", "没有权限", "禁止"};

static const char *const trans_markers[] = {"timeout",
                                            "timed out",
                                            "time out",
                                            "etimedout",
                                            "rate limit*",
                                            "ratelimit*",
                                            "too many requests",
                                            "temporar*",
                                            "overload*",
                                            "unavailable",
                                            "try again",
                                            "retry later",
                                            "try later",
                                            "econnreset",
                                            "econnrefused",
                                            "econnaborted",
                                            "connection refused",
                                            "connection reset",
                                            "connection aborted",
                                            "connection closed",
                                            "socket hang up",
                                            "broken pipe",
                                            "network is unreachable",
                                            "deadlock",
                                            "could not serialize",
                                            "server closed the connection",
                                            "bad gateway",
                                            "throttl*",
                                            "slow down",
                                            "eai again",
                                            "capacity",
                                            "busy",
                                            "upstream connect error",
                                            "zeitüberschreitung",
                                            "vorübergehend",
                                            "zu viele anfragen",
                                            "nicht erreichbar",
                                            "délai d'attente",
                                            "délai dépassé",
                                            "temporairement",
                                            "trop de requêtes",
                                            "indisponible",
                                            "tiempo de espera",
                                            "temporalmente",
                                            "demasiadas solicitudes",
                                            "no disponible",
                                            "tempo scaduto",
                                            "temporaneamente",
                                            "troppe richieste",
                                            "тайм аут",
                                            "таймаут",
                                            "временно",
                                            "слишком много запросов",
                                            "タイムアウト",
                                            "一時的",
                                            "超时",
                                            "暂时",
                                            "请求过多",
                                            "稍后重试"};

/* Words that put the number after them in status position. */
static const char *const status_words[] = {"http",        "https",   "status",   "statuscode",
                                           "status code", "code",    "upstream", "gateway",
                                           "response",    "returned"};

/* Reason phrases that put the number before them in status position. */
static const char *const reason_phrases[] = {"service unavailable",
                                             "bad gateway",
                                             "gateway timeout",
                                             "too many requests",
                                             "forbidden",
                                             "not found",
                                             "bad request",
                                             "unauthorized",
                                             "conflict",
                                             "unprocessable",
                                             "gone",
                                             "internal server error",
                                             "payload too large",
                                             "method not allowed",
                                             "request timeout"};

static bool ascii_word(unsigned char c)
{
    return c < 0x80 && isalnum(c);
}

/* Whether needle (a '*' suffix: a prefix) occurs in hay at word boundaries. */
static bool has_marker(const char *hay, const char *needle)
{
    char word[64];
    size_t n = strlen(needle);
    bool prefix = n > 0 && needle[n - 1] == '*';
    if (prefix)
        n--;
    if (n == 0 || n >= sizeof(word))
        return false;
    memcpy(word, needle, n);
    word[n] = '\0';
    for (const char *p = strstr(hay, word); p; p = strstr(p + 1, word)) {
        bool before =
            p == hay || !ascii_word((unsigned char)p[-1]) || !ascii_word((unsigned char)word[0]);
        bool after =
            prefix || !ascii_word((unsigned char)p[n]) || !ascii_word((unsigned char)word[n - 1]);
        if (before && after)
            return true;
    }
    return false;
}

static const char *first_marker(const char *hay, const char *const *list, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (has_marker(hay, list[i]))
            return list[i];
    }
    return NULL;
}

/* Append one constant token to the lower-case evidence text: '_' and '-' read as spaces,
 * JSON quotes dropped. */
static void put_lower(char *buf, size_t cap, size_t *len, const char *s, size_t n)
{
    for (size_t i = 0; i < n && *len + 2 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            continue;
        buf[(*len)++] = c == '_' || c == '-' ? ' ' : (char)tolower(c);
    }
    buf[(*len)++] = ' ';
    buf[*len] = '\0';
}

typedef struct tpl_view {
    int n;
    const char *s[VD_TPL_TOKENS];
    size_t len[VD_TPL_TOKENS];
} tpl_view;

static void split(const char *t, tpl_view *v)
{
    v->n = 0;
    for (const char *p = t; *p && v->n < VD_TPL_TOKENS;) {
        const char *e = strchr(p, ' ');
        v->s[v->n] = p;
        v->len[v->n] = e ? (size_t)(e - p) : strlen(p);
        v->n++;
        if (!e)
            break;
        p = e + 1;
    }
}

static bool constant(const tpl_view *v, int i)
{
    return !vd_tpl_is_mask(v->s[i], v->len[i]) && !vd_tpl_is_punct(v->s[i], v->len[i]);
}

static bool in_list(const char *s, size_t n, const char *const *list, size_t count)
{
    char low[32];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < sizeof(low); i++) {
        if (s[i] != '"')
            low[k++] = s[i] == '_' ? ' ' : (char)tolower((unsigned char)s[i]);
    }
    low[k] = '\0';
    for (size_t i = 0; i < count && n < sizeof(low); i++) {
        if (strcmp(low, list[i]) == 0)
            return true;
    }
    return false;
}

/* Whether a reason phrase starts at the constant tokens from position i of v. */
static bool reason_follows(const tpl_view *v, int i)
{
    char text[128] = "";
    size_t len = 0;
    for (int k = i; k < v->n && k < i + 4 && constant(v, k); k++)
        put_lower(text, sizeof(text), &len, v->s[k], v->len[k]);
    for (size_t r = 0; r < sizeof(reason_phrases) / sizeof(reason_phrases[0]); r++) {
        if (strncmp(text, reason_phrases[r], strlen(reason_phrases[r])) == 0)
            return true;
    }
    return false;
}

/* The status code at position i of m when it stands in status position, else 0. */
static int status_at(const tpl_view *v, const vd_tpl_msg *m, int i)
{
    const char *r = m->raw[i];
    int j = i - 1;
    if (m->raw_len[i] != 3 || !isdigit((unsigned char)r[0]) || !isdigit((unsigned char)r[1]) ||
        !isdigit((unsigned char)r[2]) || r[0] < '1' || r[0] > '5')
        return 0;
    int code = (r[0] - '0') * 100 + (r[1] - '0') * 10 + (r[2] - '0');
    if (m->n == 1 || reason_follows(v, i + 1))
        return code;
    while (j >= 0 && vd_tpl_is_punct(v->s[j], v->len[j]))
        j--;
    if (j < 0)
        return 0;
    if (m->raw_len[j] >= 5 && strncasecmp(m->raw[j], "http/", 5) == 0)
        return code;
    return constant(v, j) && in_list(v->s[j], v->len[j], status_words,
                                     sizeof(status_words) / sizeof(status_words[0]))
               ? code
               : 0;
}

/* The lower-case text of v's constant tokens; a mask reads as '|', so no phrase spans one. */
static void evidence_text(const tpl_view *v, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = ' ';
    buf[1] = '\0';
    len = 1;
    for (int i = 0; i < v->n; i++) {
        if (vd_tpl_is_mask(v->s[i], v->len[i]))
            put_lower(buf, cap, &len, "|", 1);
        else if (!vd_tpl_is_punct(v->s[i], v->len[i]))
            put_lower(buf, cap, &len, v->s[i], v->len[i]);
    }
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

vd_tpl_class vd_tpl_classify(const char *t, const vd_tpl_msg *m, char *why, size_t n)
{
    char own[VD_TPL_TEXT_MAX + 1], text[2 * VD_TPL_TEXT_MAX];
    tpl_view v;
    int det_code = 0, trans_code = 0;
    if (!t) {
        vd_tpl_render(m, own, sizeof(own));
        t = own;
    }
    split(t, &v);
    if (v.n != m->n) { /* not m's template: read m's own */
        vd_tpl_render(m, own, sizeof(own));
        split(own, &v);
    }
    evidence_text(&v, text, sizeof(text));
    const char *det = first_marker(text, det_markers, COUNT(det_markers));
    const char *trans = first_marker(text, trans_markers, COUNT(trans_markers));
    for (int i = 0; i < m->n && i < v.n; i++) {
        int code = status_at(&v, m, i);
        if (!trans_code && (code == 429 || code == 502 || code == 503 || code == 504))
            trans_code = code;
        else if (!det_code && code >= 400 && code < 500 && code != 429 && code != 408)
            det_code = code;
    }
    if (det || det_code) {
        if (det)
            snprintf(why, n, "deterministic: '%.*s' in the template's constant text",
                     (int)strcspn(det, "*"), det);
        else
            snprintf(why, n, "deterministic: status %d in status position", det_code);
        return VD_TPL_DETERMINISTIC;
    }
    if (trans || trans_code) {
        if (trans)
            snprintf(why, n, "transient: '%.*s' in the template's constant text",
                     (int)strcspn(trans, "*"), trans);
        else
            snprintf(why, n, "transient: status %d in status position", trans_code);
        return VD_TPL_TRANSIENT;
    }
    snprintf(why, n, "no evidence in the template's constant text: read as deterministic");
    return VD_TPL_NONE;
}
