/* redact.c - the one credential redactor (see redact.h): a table of PCRE2 patterns, each
 * naming the capture group that holds the secret (0: the whole match), applied in order.
 * Compiled once (JIT when available) and shared; each call uses its own match data.
 * Depends only on libc and PCRE2. */
#include "verdict/redact.h"
#include "verdict/buf.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct pattern {
    const char *name;
    const char *regex;
    int group; /* the capture group replaced by the mask; 0 = the whole match */
} pattern;

/* The words a key ends with when it names a secret (alone or as wp_password, access_token,
 * clientSecret, x-api-key, ...). "tokens" and "max_tokens" do not end with one. */
#define SECRET_WORDS                                                                               \
    "(?:password|passwd|passphrase|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|"       \
    "auth|authorization|credentials?|cookie)"

static const pattern table[] = {
    /* scheme://user:password@host: the password */
    {"url_userinfo", "(?i)\\b([a-z][a-z0-9+.\\-]*://[^/\\s:@\"'\\\\]+):([^/\\s@\"'\\\\]+)@", 2},
    /* Authorization: Bearer|Basic|Token|Digest <credentials>, or a bare value */
    {"authorization_header",
     "(?i)\\b(?:proxy-)?authorization\\s*[:=]\\s*\"?"
     "(?:(?:bearer|basic|token|digest|apikey|api-key|negotiate)\\s+)?([^\\s\"',;\\\\]+)",
     1},
    /* a bearer/basic credential anywhere: 8+ token68 characters with a digit, a symbol or
     * mixed case, so prose ("the bearer of bad news", "basic understanding") stays */
    {"bearer_basic",
     "\\b(?i:bearer|basic)\\s+(?=[A-Za-z0-9._~+/-]{8,})"
     "(?=[A-Za-z0-9._~+/-]*?(?:[0-9+/_~]|[a-z][A-Z]))([A-Za-z0-9._~+/-]+=*)",
     1},
    /* X-API-Key: and its relatives as headers */
    {"api_key_header",
     "(?i)\\b(?:x-api-key|x-auth-token|x-access-token|x-goog-api-key|api-key)\\s*:\\s*"
     "([^\\s\"',;\\\\]+)",
     1},
    /* key=value in query strings, forms, environments: access_token=, client_secret=,
     * wp_password=, api_key=, token=, ... */
    {"key_value",
     "(?i)(?<![A-Za-z0-9_.\\-])[A-Za-z0-9_.\\-]*?" SECRET_WORDS "\\s*=\\s*"
     "([^\\s\"'&,;\\\\<>]+)",
     1},
    /* "password": "...", "api_key": "...", "token": "..." in JSON text */
    {"json_member",
     "(?i)\"[A-Za-z0-9_.\\-]*?" SECRET_WORDS "\"\\s*:\\s*\"((?:[^\"\\\\]++|\\\\.)*+)\"", 1},
    /* provider key shapes */
    {"openai_anthropic_key", "\\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\\-]{16,}", 0},
    {"github_token", "\\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", 0},
    {"slack_token", "\\bxox[abposr]-[A-Za-z0-9\\-]{10,}", 0},
    {"aws_access_key_id", "\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b", 0},
    {"google_api_key", "\\bAIza[0-9A-Za-z_\\-]{35}", 0},
    {"stripe_secret_key", "\\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", 0},
    {"jwt", "\\beyJ[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]{8,}", 0},
    {"private_key_block",
     "-----BEGIN [A-Z ]*PRIVATE KEY-----[\\s\\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\\z)", 0},
};

#define NPATTERNS (sizeof(table) / sizeof(table[0]))

static pcre2_code *compiled[NPATTERNS];
static pcre2_code *secret_key_rx;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static pcre2_code *compile(const char *rx)
{
    int err = 0;
    PCRE2_SIZE off = 0;
    /* byte mode: every pattern is ASCII and stops only at ASCII bytes, so a mask never
     * splits a UTF-8 sequence, and text that is not UTF-8 (a log line) is still scanned */
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)rx, PCRE2_ZERO_TERMINATED, 0, &err, &off, NULL);
    if (c)
        (void)pcre2_jit_compile(c, PCRE2_JIT_COMPLETE); /* the interpreter when JIT is off */
    return c;
}

static void compile_all(void)
{
    for (size_t i = 0; i < NPATTERNS; i++)
        compiled[i] = compile(table[i].regex);
    secret_key_rx = compile("(?i)^[A-Za-z0-9_.\\-]*?" SECRET_WORDS "$");
}

size_t vd_redact_pattern_count(void)
{
    return NPATTERNS;
}

const char *vd_redact_pattern_name(size_t i)
{
    return i < NPATTERNS ? table[i].name : NULL;
}

/* One pattern over s: a new string with each match's secret group masked. */
static char *apply(const pcre2_code *code, int group, const char *s)
{
    size_t len = strlen(s), at = 0;
    vd_buf out = {0};
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(code, NULL);
    if (!md)
        return NULL;
    vd_buf_append(&out, "", 0);
    while (at <= len && !out.failed) {
        int rc = pcre2_match(code, (PCRE2_SPTR)s, len, at, 0, md, NULL);
        if (rc < 0) /* no (further) match */
            break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t gs = ov[2 * group], ge = ov[2 * group + 1], me = ov[1];
        if (rc <= group || gs == PCRE2_UNSET || ge <= gs) { /* no secret: nothing to mask */
            vd_buf_append(&out, s + at, me > at ? me - at : 1);
            at = me > at ? me : at + 1;
            continue;
        }
        vd_buf_append(&out, s + at, gs - at);
        vd_buf_append(&out, VD_REDACTED, sizeof(VD_REDACTED) - 1);
        vd_buf_append(&out, s + ge, me > ge ? me - ge : 0);
        at = me > ge ? me : ge;
    }
    if (at < len)
        vd_buf_append(&out, s + at, len - at);
    pcre2_match_data_free(md);
    if (out.failed) {
        vd_buf_cleanup(&out);
        return NULL;
    }
    return vd_buf_take(&out);
}

char *vd_redact(const char *s)
{
    char *cur = strdup(s);
    pthread_once(&once, compile_all);
    for (size_t i = 0; cur && i < NPATTERNS; i++) {
        char *next = NULL;
        if (!compiled[i])
            continue; /* cannot happen: the table is tested */
        next = apply(compiled[i], table[i].group, cur);
        free(cur);
        cur = next;
    }
    return cur;
}

bool vd_redact_is_secret_key(const char *key)
{
    pcre2_match_data *md = NULL;
    int rc = 0;
    pthread_once(&once, compile_all);
    if (secret_key_rx)
        md = pcre2_match_data_create_from_pattern(secret_key_rx, NULL);
    if (!md)
        return true; /* out of memory: mask rather than leak */
    rc = pcre2_match(secret_key_rx, (PCRE2_SPTR)key, strlen(key), 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc > 0;
}
