/* fuzz_url_unescape.c - libFuzzer target for the percent-decoding of the path and query
 * (vd_url_unescape, src/http/input.c, libmicrohttpd's unescape callback) and the control-byte
 * test (vd_has_control): the decoded text is never longer, its returned length is its
 * strlen (a %00 never cuts it short), and it holds a control byte exactly when the input had
 * one or a %XX that decodes to one. Built and run bounded by scripts/fuzz.sh. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http/input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hex(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
        return (c | 0x20) - 'a' + 10;
    return -1;
}

/* Whether s holds a control byte, raw or as a %XX the decoder takes. */
static bool any_control(const char *s)
{
    for (size_t i = 0; s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '%' && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            c = (unsigned char)(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        }
        if (c < 0x20 || c == 0x7F)
            return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    size_t before = strlen(s);
    bool control = any_control(s);
    size_t n = vd_url_unescape(s);
    if (n > before || n != strlen(s) || vd_has_control(s) != control)
        abort();
    free(s);
    return 0;
}
