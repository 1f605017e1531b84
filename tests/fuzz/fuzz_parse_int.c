/* fuzz_parse_int.c - libFuzzer target for vd_parse_i64 (src/common/util.c), the one parse of
 * every number from outside (a header, a path id, a query argument, a setting): the first 16
 * bytes pick the bounds, the rest is the text. The answer must equal a reference built on
 * strtoll with errno (a sign, digits only), the value must be within the bounds, and nothing
 * may overflow (UBSan). Built and run bounded by scripts/fuzz.sh. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reference: '-'? digit+, within a long long and [min, max]. */
static int reference(const char *s, size_t len, int64_t min, int64_t max, int64_t *out)
{
    size_t i = len > 0 && s[0] == '-' ? 1 : 0;
    char *end = NULL;
    if (i == len)
        return 0;
    for (size_t k = i; k < len; k++) {
        if (s[k] < '0' || s[k] > '9')
            return 0;
    }
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end != s + len || v < min || v > max)
        return 0;
    *out = v;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t min = 0, max = INT64_MAX, got = 7, want = 7;
    if (size >= 16) {
        memcpy(&min, data, 8);
        memcpy(&max, data + 8, 8);
        data += 16;
        size -= 16;
    }
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t len = strlen(s); /* strtoll stops at a NUL; the reference sees the same text */
    int ok = vd_parse_i64(s, len, min, max, &got);
    if (ok != reference(s, len, min, max, &want) || got != want || (ok && (got < min || got > max)))
        abort();
    free(s);
    return 0;
}
