/* input.c - the pure parsers of a request's path, query and headers (input.h). */
#include "input.h"

#include <stdio.h>
#include <string.h>

#include "verdict/util.h"

bool vd_is_uuid(const char *s)
{
    static const char shape[] = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx";
    if (strlen(s) != sizeof(shape) - 1)
        return false;
    for (size_t i = 0; shape[i]; i++) {
        char c = s[i];
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
        if (shape[i] == '-' ? c != '-' : !hex)
            return false;
    }
    return true;
}

bool vd_claim_header_parse(const char *h, int64_t *job, char token[VD_UUID_SIZE])
{
    const char *colon = strchr(h, ':');
    int64_t id = 0;
    if (!colon || h[0] == '0' || !vd_parse_i64(h, (size_t)(colon - h), 1, VD_MAX_ID, &id) ||
        !vd_is_uuid(colon + 1))
        return false;
    *job = id;
    snprintf(token, VD_UUID_SIZE, "%s", colon + 1);
    return true;
}

/* The value of hex digit c, or -1. */
static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

size_t vd_url_unescape(char *s)
{
    size_t r = 0, w = 0;
    while (s[r]) {
        int hi = s[r] == '%' ? hex_value(s[r + 1]) : -1;
        int lo = hi >= 0 ? hex_value(s[r + 2]) : -1;
        if (lo < 0) {
            s[w++] = s[r++];
            continue;
        }
        unsigned char c = (unsigned char)(hi * 16 + lo);
        s[w++] = (char)(c == 0 ? 0x7F : c);
        r += 3;
    }
    s[w] = '\0';
    return w;
}

bool vd_has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p < 0x20 || *p == 0x7F)
            return true;
    }
    return false;
}
