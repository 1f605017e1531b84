/* redact.c - the one credential redactor (see redact.h): a table of PCRE2 patterns applied in
 * order, each of one kind: MASK replaces a capture group (0: the whole match); KEYED finds a
 * name and its value (key=value, key: value, --flag value, "key": "value", <key>value</key>)
 * and masks the value only when the name names a secret (the key rule below, the same one
 * JSON members are judged by); COOKIE masks the value of every pair of a Cookie header.
 * Compiled once (JIT when available) and shared; each call uses its own match data.
 * Depends only on libc and PCRE2. */
#include "verdict/redact.h"
#include "verdict/buf.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <ctype.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum { MASK, KEYED, COOKIE } kind;

typedef struct pattern {
    const char *name;
    const char *regex;
    kind kind;
    int group; /* the capture group masked (MASK, COOKIE) or the value (KEYED); 0 = all */
    int key;   /* KEYED: the capture group of the name */
} pattern;

/* The stems of the secret words (the key rule below): a name without one is no secret, and
 * the regex skips it without a call into the key rule (the cost of a text with many
 * name=value pairs). */
#define STEM "(?i:pass|pwd|secret|token|key|auth|cookie|sess|sig|cred|bearer|jwt)"
/* A name as it appears before a value: a letter or _, name characters, one of them a stem. */
#define KEY "((?=[A-Za-z_])[A-Za-z0-9_.\\-]{0,40}?" STEM "[A-Za-z0-9_.\\-]{0,40})"
/* A double-quoted string with escapes, or a single-quoted one. */
#define QUOTED "\"(?:[^\"\\\\]|\\\\.)*\"|'[^'\\n]*'"

static const pattern table[] = {
    {"private_key_block",
     "-----BEGIN [A-Z ]*PRIVATE KEY-----[\\s\\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\\z)", MASK,
     0, 0},
    /* scheme://user:password@host: the password */
    {"url_userinfo", "(?i)\\b([a-z][a-z0-9+.\\-]*://[^/\\s:@\"'\\\\]+):([^/\\s@\"'\\\\]+)@", MASK,
     2, 0},
    /* Authorization: Bearer|Basic|Token|Digest <credentials>, or a bare value */
    {"authorization_header",
     "(?i)\\b(?:proxy-)?authorization\\s*[:=]\\s*\"?"
     "(?:(?:bearer|basic|token|digest|apikey|api-key|negotiate)\\s+)?([^\\s\"',;\\\\]+)",
     MASK, 1, 0},
    /* Cookie: a=1; b=2 and Set-Cookie: every value */
    {"cookie_header", "(?i)\\b(?:set-)?cookie[ \\t]*:[ \\t]*([^\\r\\n\"\\\\]*)", COOKIE, 1, 0},
    /* a bearer/basic credential anywhere: 8+ token68 characters with a digit, a symbol or
     * mixed case, so prose ("the bearer of bad news", "basic understanding") stays */
    {"bearer_basic",
     "\\b(?i:bearer|basic)\\s+(?=[A-Za-z0-9._~+/-]{8,})"
     "(?=[A-Za-z0-9._~+/-]*?(?:[0-9+/_~]|[a-z][A-Z]))([A-Za-z0-9._~+/-]+=*)",
     MASK, 1, 0},
    /* mysql -pSECRET (the password glued to -p; -P is the port) */
    {"mysql_p",
     "\\b(?i:mysql|mysqldump|mysqladmin|mysqlimport|mysqlcheck|mariadb|mariadb-dump)\\b"
     "[^\\n;|&]*?\\s-p([^\\s\"'\\-][^\\s\"']*)",
     MASK, 1, 0},
    /* sshpass -p SECRET */
    {"sshpass_p", "\\bsshpass\\s+(?:-[a-oq-zA-Z]\\S*\\s+)*-p\\s*([^\\s\"']+)", MASK, 1, 0},
    /* curl -u user:SECRET, --user user:SECRET */
    {"user_colon_password", "(?:(?<=\\s)-u|--user)[ =]+['\"]?[^:\\s'\"]+:([^\\s'\"@]+)", MASK, 1,
     0},
    /* --password SECRET, --token=SECRET, -api-key SECRET */
    {"flag",
     "(?<![A-Za-z0-9_\\-])--?((?=[A-Za-z])[A-Za-z0-9_\\-]{0,40}?" STEM "[A-Za-z0-9_\\-]{0,40})"
     "(?:=|[ \\t]+)(?!-)"
     "(" QUOTED "|[^\\s\"']+)",
     KEYED, 2, 1},
    /* "password": "SECRET" and 'password': 'SECRET' (JSON, Python, YAML flow) */
    {"json_member", "\"" KEY "\"\\s*:\\s*\"((?:[^\"\\\\]|\\\\.)*)\"", KEYED, 2, 1},
    {"quoted_member", "'" KEY "'\\s*:\\s*'((?:[^'\\\\]|\\\\.)*)'", KEYED, 2, 1},
    /* \"password\": \"SECRET\" (JSON inside a JSON string) */
    {"escaped_json_member", "\\\\\"" KEY "\\\\\"\\s*:\\s*\\\\\"((?:[^\\\\]|\\\\[^\"])*?)\\\\\"",
     KEYED, 2, 1},
    /* "pin": 1234 */
    {"json_number", "\"" KEY "\"\\s*:\\s*(-?[0-9][0-9.eE+\\-]*)", KEYED, 2, 1},
    /* <password>SECRET</password> */
    {"xml_element", "<" KEY "(?:\\s[^>]*)?>([^<]{1,1000})</\\1>", KEYED, 2, 1},
    /* key=value, key: value (headers such as PRIVATE-TOKEN:, YAML, logs), and URL-encoded
     * pairs (access_token%3D...%26); a value that is an auth scheme is left to the rows
     * above */
    {"key_value",
     "(?=[A-Za-z_])(?:(?<=%26)|(?<=%3[Ff])|(?<=%2526)|(?<=%253[Ff])|(?<![A-Za-z0-9_.\\-%]))"
     /* a separator after the name (one possessive scan), before the stem is looked for */
     "(?=[A-Za-z0-9_.\\-]{1,81}+[ \\t]*(?:=|:|%3[Dd]|%253[Dd]))" KEY
     "[ \\t]*(?:=|:|%3[Dd]|%253[Dd])[ \\t]*(?!(?i:bearer|basic|digest|negotiate|token)\\s)"
     "(" QUOTED "|(?:(?!%26|%2526)[^\\s\"'&,;\\\\<>])+)",
     KEYED, 2, 1},
    /* provider key shapes */
    {"openai_anthropic_key", "\\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_\\-]{16,}", MASK, 0, 0},
    {"github_token", "\\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})", MASK, 0, 0},
    {"gitlab_token", "\\bgl(?:pat|dt|rt|ptt|ft)-[A-Za-z0-9_\\-]{20,}", MASK, 0, 0},
    {"slack_token", "\\bxox[abposr]-[A-Za-z0-9\\-]{10,}", MASK, 0, 0},
    {"aws_access_key_id", "\\b(?:AKIA|ASIA)[0-9A-Z]{16}\\b", MASK, 0, 0},
    {"google_api_key", "\\bAIza[0-9A-Za-z_\\-]{35}", MASK, 0, 0},
    {"stripe_secret_key", "\\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", MASK, 0, 0},
    {"huggingface_token", "\\bhf_[A-Za-z0-9]{30,}", MASK, 0, 0},
    {"npm_pypi_token", "\\b(?:npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_\\-]{50,})", MASK, 0, 0},
    {"sendgrid_key", "\\bSG\\.[A-Za-z0-9_\\-]{16,}\\.[A-Za-z0-9_\\-]{16,}", MASK, 0, 0},
    {"jwt", "\\beyJ[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]{8,}\\.[A-Za-z0-9_\\-]{8,}", MASK, 0, 0},
};

#define NPATTERNS (sizeof(table) / sizeof(table[0]))

static pcre2_code *compiled[NPATTERNS];
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
}

size_t vd_redact_pattern_count(void)
{
    return NPATTERNS;
}

const char *vd_redact_pattern_name(size_t i)
{
    return i < NPATTERNS ? table[i].name : NULL;
}

/* ---- the key rule ------------------------------------------------------------------------ */

/* Words that name a secret, alone or as one word of a longer name (wp_password, X-Auth-Token,
 * sessionId, AccountKey). Plurals that count things ("tokens", "keys") are not among them. */
static const char *const secret_words[] = {
    "password",   "passwd",    "pwd",        "passphrase",    "passcode",
    "secret",     "secrets",   "token",      "key",           "apikey",
    "auth",       "authn",     "authz",      "authorization", "authentication",
    "cookie",     "cookies",   "session",    "sessionid",     "sessid",
    "sig",        "signature", "credential", "credentials",   "creds",
    "privatekey", "accesskey", "secretkey",  "bearer",        "jwt",
    NULL};
/* ... and glued to the end of a longer word (pgpassword, mysqlpwd, csrftoken, jsessionid,
 * oauth); "key" and "sig" are not (monkey, hotkey) */
static const char *const glued_suffixes[] = {
    "password",  "passwd",     "pwd",         "passphrase", "secret", "token",
    "cookie",    "credential", "credentials", "sessionid",  "sessid", "apikey",
    "accesskey", "secretkey",  "privatekey",  "auth",       NULL};
/* ... or to the start of one (passwordhash, secretvalue) */
static const char *const glued_prefixes[] = {"password", "passwd", "secret", NULL};
/* A word after the secret word, or the last word, that makes the name describe it rather
 * than hold it (token_count, password_hint, key_file, session_ttl, oauth_callback_url). */
static const char *const about_words[] = {
    "count",    "counts",   "num",      "number",    "used",       "usage",    "limit", "limits",
    "max",      "min",      "length",   "len",       "size",       "type",     "types", "kind",
    "name",     "names",    "expires",  "expiry",    "expiration", "expired",  "ttl",   "lifetime",
    "hint",     "hints",    "policy",   "url",       "uri",        "endpoint", "path",  "file",
    "location", "format",   "version",  "algorithm", "alg",        "method",   "mode",  "scheme",
    "enabled",  "required", "rotation", "rotated",   "created",    "updated",  "at",    "timeout",
    "seconds",  "secs",     "ms",       "interval",  "duration",   "retries",  NULL};
/* A word before it that makes the name a count (max_token, total_key_count). */
static const char *const count_words[] = {"max", "min", "num", "total", "n", NULL};

static bool in_list(const char *const *list, const char *w)
{
    for (size_t i = 0; list[i]; i++) {
        if (strcmp(list[i], w) == 0)
            return true;
    }
    return false;
}

static bool glued(const char *w)
{
    size_t n = strlen(w);
    for (size_t i = 0; glued_suffixes[i]; i++) {
        size_t k = strlen(glued_suffixes[i]);
        if (n > k && strcmp(w + n - k, glued_suffixes[i]) == 0)
            return true;
    }
    for (size_t i = 0; glued_prefixes[i]; i++) {
        size_t k = strlen(glued_prefixes[i]);
        if (n > k && strncmp(w, glued_prefixes[i], k) == 0)
            return true;
    }
    return false;
}

#define MAX_WORDS 16
#define WORD_LEN 48

/* Whether a new word starts at key[i]: after a separator (done by the caller), at a
 * lower->Upper step (apiKey), at the last capital of a run before lower case (APIKey), and
 * between letters and digits (oauth2token). */
static bool word_starts(const char *key, size_t len, size_t i)
{
    unsigned char p = (unsigned char)key[i - 1], c = (unsigned char)key[i],
                  n = i + 1 < len ? (unsigned char)key[i + 1] : 0;
    if (islower(p) && isupper(c))
        return true;
    if (isupper(p) && isupper(c) && islower(n))
        return true;
    return (isdigit(p) != 0) != (isdigit(c) != 0);
}

/* Split key[0..len) into lower-case words; returns how many (at most MAX_WORDS). */
static size_t split_words(const char *key, size_t len, char words[MAX_WORDS][WORD_LEN])
{
    size_t nw = 0, wl = 0;
    for (size_t i = 0; i < len && nw < MAX_WORDS; i++) {
        unsigned char c = (unsigned char)key[i];
        if (!isalnum(c)) {
            nw += wl > 0;
            wl = 0;
            continue;
        }
        if (wl > 0 && word_starts(key, len, i)) {
            nw++;
            wl = 0;
            if (nw >= MAX_WORDS)
                break;
        }
        if (wl + 1 < WORD_LEN) {
            words[nw][wl++] = (char)tolower(c);
            words[nw][wl] = '\0';
        }
    }
    return nw + (wl > 0 && nw < MAX_WORDS);
}

static bool secret_key_n(const char *key, size_t len)
{
    char words[MAX_WORDS][WORD_LEN];
    size_t n = split_words(key, len, words);
    if (n > 0 && strcmp(words[0], "no") == 0) /* --no-password, no_auth */
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!in_list(secret_words, words[i]) && !glued(words[i]))
            continue;
        if (i + 1 < n && (in_list(about_words, words[i + 1]) || in_list(about_words, words[n - 1])))
            continue; /* token_count, oauth_callback_url */
        if (i > 0 && in_list(count_words, words[i - 1]))
            continue;
        return true;
    }
    return false;
}

bool vd_redact_is_secret_key(const char *key)
{
    return secret_key_n(key, strlen(key));
}

/* ---- applying the table ------------------------------------------------------------------ */

/* Values left in place after a secret name: already masked, or a word that says what
 * happened to the secret rather than being it ("token: expired", "password=missing"). */
static const char *const status_words[] = {
    "expired",   "invalid",   "missing",  "required", "revoked",   "none",     "null",
    "empty",     "denied",    "rejected", "unset",    "undefined", "redacted", "present",
    "absent",    "provided",  "ok",       "true",     "false",     "yes",      "no",
    "nil",       "incorrect", "wrong",    "changed",  "reset",     "mismatch", "unknown",
    "required.", "expired.",  "invalid.", NULL};

static bool keep_value(const char *v, size_t n)
{
    char w[16];
    for (size_t i = 0; i + sizeof(VD_REDACTED) - 1 <= n; i++) { /* masked (inside) already */
        if (strncmp(v + i, VD_REDACTED, sizeof(VD_REDACTED) - 1) == 0)
            return true;
    }
    if (n == 0 || n >= sizeof(w))
        return n == 0;
    for (size_t i = 0; i < n; i++)
        w[i] = (char)tolower((unsigned char)v[i]);
    w[n] = '\0';
    return in_list(status_words, w);
}

/* Strip one pair of matching quotes around s[*gs..*ge). */
static void unquote(const char *s, size_t *gs, size_t *ge)
{
    if (*ge - *gs >= 2 && (s[*gs] == '"' || s[*gs] == '\'') && s[*ge - 1] == s[*gs]) {
        (*gs)++;
        (*ge)--;
    }
}

/* A Cookie header's value: each name=value pair's value masked, names kept; of a Set-Cookie
 * header (first_only) the cookie's value, not its attributes (Path=/, Expires=...). */
static void mask_cookies(vd_buf *out, const char *s, size_t n, bool first_only)
{
    size_t i = 0;
    for (bool first = true; i < n; first = false) {
        size_t end = i, eq = 0;
        while (end < n && s[end] != ';')
            end++;
        for (size_t j = i; j < end && !eq; j++)
            eq = s[j] == '=' ? j + 1 : 0;
        if (eq && (first || !first_only) && !keep_value(s + eq, end - eq)) {
            vd_buf_append(out, s + i, eq - i);
            vd_buf_append(out, VD_REDACTED, sizeof(VD_REDACTED) - 1);
        } else {
            vd_buf_append(out, s + i, end - i);
        }
        if (end < n)
            vd_buf_append(out, ";", 1);
        i = end + 1;
    }
}

/* One match of row p at s (ov: its offsets), written to out from *at; *at moves past what
 * was written. A KEYED match whose name is no secret moves only to its value, which may
 * hold a secret of its own (a=token=x). */
static void one_match(const pattern *p, const char *s, const PCRE2_SIZE *ov, int rc, vd_buf *out,
                      size_t *at)
{
    size_t gs = ov[2 * p->group], ge = ov[2 * p->group + 1], me = ov[1];
    if (rc <= p->group || gs == PCRE2_UNSET || ge <= gs) { /* no secret: nothing to mask */
        vd_buf_append(out, s + *at, me > *at ? me - *at : 1);
        *at = me > *at ? me : *at + 1;
        return;
    }
    if (p->kind == KEYED) {
        size_t ks = ov[2 * p->key], ke = ov[2 * p->key + 1];
        unquote(s, &gs, &ge);
        if (!secret_key_n(s + ks, ke - ks) || keep_value(s + gs, ge - gs)) {
            vd_buf_append(out, s + *at, gs - *at);
            *at = gs;
            return;
        }
    }
    vd_buf_append(out, s + *at, gs - *at);
    if (p->kind == COOKIE)
        mask_cookies(out, s + gs, ge - gs, strncasecmp(s + ov[0], "set-", 4) == 0);
    else
        vd_buf_append(out, VD_REDACTED, sizeof(VD_REDACTED) - 1);
    vd_buf_append(out, s + ge, me > ge ? me - ge : 0);
    *at = me > ge ? me : ge;
}

/* One row over s: a new string with each match's secret masked. */
static char *apply(const pattern *p, const pcre2_code *code, const char *s)
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
        one_match(p, s, pcre2_get_ovector_pointer(md), rc, &out, &at);
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
        next = apply(&table[i], compiled[i], cur);
        free(cur);
        cur = next;
    }
    return cur;
}

bool vd_redact_pattern_compiles(size_t i)
{
    pthread_once(&once, compile_all);
    return i < NPATTERNS && compiled[i] != NULL;
}
