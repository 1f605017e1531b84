/* test_redact.c - the credential redactor (src/common/redact.c): a table of texts and what
 * must be stored for each (secrets masked, prose kept readable), idempotence, every pattern
 * row exercised, and which JSON keys name a secret. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verdict/redact.h"

typedef struct redact_case {
    const char *in;
    const char *want; /* NULL: unchanged */
} redact_case;

#define R "[REDACTED]"

static const redact_case cases[] = {
    /* key=value, as in query strings, forms and environments */
    {"GET /cb?code=1&access_token=ya29.a0AfH6SMB&x=2", "GET /cb?code=1&access_token=" R "&x=2"},
    {"refresh_token=1//0gdXyZ-abc", "refresh_token=" R},
    {"client_secret=GOCSPX-abcdef123 was rejected", "client_secret=" R " was rejected"},
    {"login failed for wp_password=hunter2!", "login failed for wp_password=" R},
    {"PASSWORD = s3cr3t", "PASSWORD = " R},
    {"api_key=abc123;other=1", "api_key=" R ";other=1"},
    {"token=abc&secret=def", "token=" R "&secret=" R},
    {"DB_PASSWORD=pw in env", "DB_PASSWORD=" R " in env"},
    /* JSON members, any depth */
    {"{\"user\":\"bob\",\"password\":\"hunter2\"}", "{\"user\":\"bob\",\"password\":\"" R "\"}"},
    {"args: {\"api_key\": \"k-123\", \"q\": \"cats\"}",
     "args: {\"api_key\": \"" R "\", \"q\": \"cats\"}"},
    {"{\"a\":{\"b\":{\"secret\":\"x\\\"y\"}}}", "{\"a\":{\"b\":{\"secret\":\"" R "\"}}}"},
    {"{\"token\": \"abc\"}", "{\"token\": \"" R "\"}"},
    {"{\"clientSecret\":\"v\"}", "{\"clientSecret\":\"" R "\"}"},
    /* headers */
    {"X-API-Key: 0123456789abcdef", "X-API-Key: " R},
    {"x-api-key:abc", "x-api-key:" R},
    {"Authorization: Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b", "Authorization: Token " R},
    {"Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic " R},
    {"authorization: Bearer eyJhbGciOi.J9.x", "authorization: Bearer " R},
    {"curl -H 'Authorization: abc123'", "curl -H 'Authorization: " R "'"},
    {"sent Bearer abc.def-123_XYZ upstream", "sent Bearer " R " upstream"},
    {"Basic dXNlcjpwYXNzd29yZA== was sent", "Basic " R " was sent"},
    /* URLs with user:password@ */
    {"postgres://verdict:pa55w0rd@db:5432/v", "postgres://verdict:" R "@db:5432/v"},
    {"fetch https://admin:hunter2@example.com/x failed",
     "fetch https://admin:" R "@example.com/x failed"},
    /* provider key shapes */
    {"key sk-proj-AbCdEfGhIjKlMnOpQrStUv was revoked", "key " R " was revoked"},
    {"sk-ant-api03-abcdefghijklmnopqrstuvwxyz", R},
    {"ghp_0123456789abcdefghijABCDEFGHIJ012345 leaked", R " leaked"},
    {"github_pat_11ABCDEFG0123456789_abcdefghijklmnop", R},
    {"slack xoxb-123456789012-abcdefghij", "slack " R},
    {"aws AKIAIOSFODNN7EXAMPLE key", "aws " R " key"},
    {"AIzaSyA-1234567890abcdefghijklmnopqrstu", R},
    {"stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe " R},
    {"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N", "jwt " R},
    {"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY----- ok", R " ok"},
    /* prose stays readable */
    {"The model used 1234 tokens; max_tokens=4096 was the limit.", NULL},
    {"tokens=512 input_tokens=10", NULL},
    {"Tokenization splits text into tokens before the secret sauce.", NULL},
    {"the bearer of bad news", NULL},
    {"a basic understanding of passwords", NULL},
    {"Reset your password in the settings page.", NULL},
    {"see https://example.com/docs/tokens?page=2", NULL},
    {"task-list and sk-learn are libraries", NULL},
    {"{\"tokens\": 1234, \"max_tokens\": 4096}", NULL},
    {"", NULL},
    {"caf\xc3\xa9 token=\xc3\xa9t\xc3\xa9 fin", "caf\xc3\xa9 token=" R " fin"},
    /* the seven shapes a reader key could read, each beside text that stays */
    {"password: hunter2 and tokens_used: 40", "password: " R " and tokens_used: 40"},
    {"run mytool --password hunter2 --verbose", "run mytool --password " R " --verbose"},
    {"Cookie: sessionid=abc123; theme=dark", "Cookie: sessionid=" R "; theme=" R},
    {"GET /cb?next=%2Fhome%3Faccess_token%3Dya29.AbC%26page%3D2 HTTP/1.1",
     "GET /cb?next=%2Fhome%3Faccess_token%3D" R "%26page%3D2 HTTP/1.1"},
    {"PRIVATE-TOKEN: 9koXpg98eAheJpvBs5tK", "PRIVATE-TOKEN: " R},
    {"https://a.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sr=b&sp=r&sig=AbC%2Bd%3D",
     "https://a.blob.core.windows.net/c/b?sv=2022-11-02&se=2030-01-01&sr=b&sp=r&sig=" R},
    {"args: {\"pwd\": \"hunter2\", \"keyword\": \"cats\"}",
     "args: {\"pwd\": \"" R "\", \"keyword\": \"cats\"}"},
    /* headers by name */
    {"curl -H \"X-Auth-Token: abc123\" https://x", "curl -H \"X-Auth-Token: " R "\" https://x"},
    {"X-Amz-Security-Token: FQoGZXIvYXdzEJr", "X-Amz-Security-Token: " R},
    {"X-Vault-Token: s.abcdef; Accept: */*", "X-Vault-Token: " R "; Accept: */*"},
    {"Set-Cookie: id=a3fWa; Path=/; HttpOnly", "Set-Cookie: id=" R "; Path=/; HttpOnly"},
    {"Proxy-Authorization: Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Proxy-Authorization: Basic " R},
    /* command-line flags */
    {"deploy --token=abc123 --dry-run", "deploy --token=" R " --dry-run"},
    {"tool --api-key \"k 1\" --region eu", "tool --api-key \"" R "\" --region eu"},
    {"mysql -u root -phunter2 shop", "mysql -u root -p" R " shop"},
    {"sshpass -p hunter2 ssh host", "sshpass -p " R " ssh host"},
    {"curl -u bob:hunter2 https://x", "curl -u bob:" R " https://x"},
    {"psql -h db -p 5432 -U app", NULL},
    {"gh --no-password file.txt", NULL},
    {"redis-cli -a --secret=s3 --db 2", "redis-cli -a --secret=" R " --db 2"},
    /* environments and connection strings */
    {"export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "export AWS_SECRET_ACCESS_KEY=" R},
    {"PGPASSWORD=hunter2 psql", "PGPASSWORD=" R " psql"},
    {"MYSQL_PWD='hunter2' mysql", "MYSQL_PWD='" R "' mysql"},
    {"AccountName=acct;AccountKey=abc+def==;EndpointSuffix=core.windows.net",
     "AccountName=acct;AccountKey=" R ";EndpointSuffix=core.windows.net"},
    {"SharedAccessSignature=sv=2020&sig=xyz", "SharedAccessSignature=" R "&sig=" R},
    /* URL-encoded, double-encoded, OAuth */
    {"redirect=https%253A%252F%252Fx%253Ftoken%253Dabc%2526y%253D1",
     "redirect=https%253A%252F%252Fx%253Ftoken%253D" R "%2526y%253D1"},
    {"oauth_token=abc&oauth_callback_url=x&page=2",
     "oauth_token=" R "&oauth_callback_url=x&page=2"},
    {"?session=abc&keyword=cats", "?session=" R "&keyword=cats"},
    /* members of JSON, Python, XML, JSON inside a string */
    {"{'password': 'hunter2', 'user': 'bob'}", "{'password': '" R "', 'user': 'bob'}"},
    {"<password>hunter2</password><user>bob</user>", "<password>" R "</password><user>bob</user>"},
    {"{\"pwd\": 1234, \"tokens\": 5}", "{\"pwd\": " R ", \"tokens\": 5}"},
    {"stdout: {\\\"api_key\\\": \\\"k-123\\\", \\\"q\\\": \\\"x\\\"}",
     "stdout: {\\\"api_key\\\": \\\"" R "\\\", \\\"q\\\": \\\"x\\\"}"},
    {"\"sessionId\":\"s-123\",\"author\":\"Ann\",\"design\":\"x\"",
     "\"sessionId\":\"" R "\",\"author\":\"Ann\",\"design\":\"x\""},
    {"{\"auth\": {\"type\": \"basic\"}, \"signature\": \"ab12\"}",
     "{\"auth\": {\"type\": \"basic\"}, \"signature\": \"" R "\"}"},
    /* key prefixes */
    {"hf_abcdefghijklmnopqrstuvwxyzABCDEFGH used", R " used"},
    {"glpat-abcdefghijklmnopqrst in CI", R " in CI"},
    {"SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG sent", R " sent"},
    /* names that describe a secret, count it or only look like one: kept */
    {"keyword: cats, author: Ann, signal: up, monkey: George", NULL},
    {"password_hint: your pet; token_count=12; key_file=/etc/k.pem", NULL},
    {"max_token: 4096, session_count=3, token_type=bearer", NULL},
    {"token: expired; password=missing", NULL},
    {"retry with --session-timeout 30 and auth: invalid", NULL},
    {"Error: invalid credentials for user bob", NULL},
    {"the session: SESS1234 expired", "the session: " R " expired"},
    {"key: value", "key: " R},
    {"token=" R, NULL},
};

static void test_redact_table(void **state)
{
    (void)state;
    size_t n = sizeof(cases) / sizeof(cases[0]);
    assert_true(n >=
                85); /* 40 and more of them added for the seven shapes a reader key could read */
    for (size_t i = 0; i < n; i++) {
        const char *want = cases[i].want ? cases[i].want : cases[i].in;
        char *got = vd_redact(cases[i].in);
        assert_non_null(got);
        if (strcmp(got, want) != 0)
            fail_msg("case %zu: '%s'\n  want '%s'\n   got '%s'", i, cases[i].in, want, got);
        /* idempotent: what was stored redacted is stored the same way again */
        char *again = vd_redact(got);
        assert_string_equal(again, got);
        free(again);
        free(got);
    }
}

/* The table is named row by row (the README lists it). */
static void test_redact_pattern_names(void **state)
{
    (void)state;
    size_t np = vd_redact_pattern_count();
    assert_true(np >= 10);
    for (size_t p = 0; p < np; p++) {
        assert_non_null(vd_redact_pattern_name(p));
        if (!vd_redact_pattern_compiles(p))
            fail_msg("row %s does not compile", vd_redact_pattern_name(p));
    }
    assert_null(vd_redact_pattern_name(np));
}

static void test_redact_secret_keys(void **state)
{
    (void)state;
    static const char *yes[] = {"password",
                                "PASSWORD",
                                "wp_password",
                                "api_key",
                                "apiKey",
                                "x-api-key",
                                "secret",
                                "client_secret",
                                "token",
                                "access_token",
                                "refreshToken",
                                "authorization",
                                "credentials",
                                "auth",
                                "passwd",
                                "pwd",
                                "MYSQL_PWD",
                                "PGPASSWORD",
                                "sessionid",
                                "sessionId",
                                "session",
                                "JSESSIONID",
                                "PHPSESSID",
                                "csrftoken",
                                "PRIVATE-TOKEN",
                                "sig",
                                "signature",
                                "X-Amz-Signature",
                                "AccountKey",
                                "APIKey",
                                "cookie",
                                "Cookie",
                                "oauth",
                                "db.password",
                                "secret_access_key",
                                "key",
                                "private_key",
                                "sas_token",
                                "auth_header",
                                "passwordHash",
                                NULL};
    static const char *no[] = {"tokens",
                               "max_tokens",
                               "input_tokens",
                               "token_count",
                               "author",
                               "keyword",
                               "title",
                               "password_hint_shown",
                               "tokens_used",
                               "design",
                               "signal",
                               "monkey",
                               "session_count",
                               "key_file",
                               "token_type",
                               "no_password",
                               "max_token",
                               "signature_version",
                               "keys",
                               "cookie_name",
                               "authority",
                               "passage",
                               NULL};
    for (size_t i = 0; yes[i]; i++) {
        if (!vd_redact_is_secret_key(yes[i]))
            fail_msg("'%s' should be a secret key", yes[i]);
    }
    for (size_t i = 0; no[i]; i++) {
        if (vd_redact_is_secret_key(no[i]))
            fail_msg("'%s' should not be a secret key", no[i]);
    }
}

/* A long text with many secrets: all masked, nothing else changed. */
static void test_redact_long_text(void **state)
{
    (void)state;
    size_t reps = 2000, cap = reps * 32 + 1, ni = 0, nw = 0;
    char *in = malloc(cap), *want = malloc(cap);
    assert_non_null(in);
    assert_non_null(want);
    for (size_t i = 0; i < reps; i++) {
        ni += (size_t)snprintf(in + ni, cap - ni, "a token=abc&b=1 ");
        nw += (size_t)snprintf(want + nw, cap - nw, "a token=" R "&b=1 ");
    }
    char *got = vd_redact(in);
    assert_string_equal(got, want);
    free(got);
    free(in);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_redact_table),
        cmocka_unit_test(test_redact_pattern_names),
        cmocka_unit_test(test_redact_secret_keys),
        cmocka_unit_test(test_redact_long_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
