/* router.c - match a method and path against the declarative route table. Patterns are
 * literal segments and "{name}" parameters; a path that matches some pattern with another
 * method is a 405 with the methods that would do. Pure; no I/O. */
#include "http_internal.h"

#include <stdio.h>
#include <string.h>

/* Next path segment of *p: sets seg/len and advances past it; false at the end. */
static bool next_segment(const char **p, const char **seg, size_t *len)
{
    while (**p == '/')
        (*p)++;
    if (**p == '\0')
        return false;
    *seg = *p;
    while (**p && **p != '/')
        (*p)++;
    *len = (size_t)(*p - *seg);
    return true;
}

static bool pattern_matches(const char *pattern, const char *path, vd_match *out)
{
    const char *pp = pattern, *ap = path, *ps = NULL, *as = NULL;
    size_t pl = 0, al = 0;
    int n = 0;
    /* a trailing slash is not the same resource: only a pattern that ends in one (/ui/)
     * matches a path that does */
    size_t plen = strlen(path), patlen = strlen(pattern);
    if (path[0] != '/' || (plen > 1 && path[plen - 1] == '/') != (pattern[patlen - 1] == '/'))
        return false;
    for (;;) {
        bool hp = next_segment(&pp, &ps, &pl), ha = next_segment(&ap, &as, &al);
        if (!hp || !ha)
            return hp == ha;
        if (ps[0] == '{') {
            if (n >= VD_MAX_PARAMS || al >= VD_PARAM_MAX)
                return false;
            memcpy(out->params[n], as, al);
            out->params[n][al] = '\0';
            n++;
        } else if (pl != al || memcmp(ps, as, pl) != 0) {
            return false;
        }
        out->nparams = n;
    }
}

vd_match_result vd_route_match(const vd_route *table, size_t n, const char *method,
                               const char *path, vd_match *out)
{
    bool path_seen = false;
    size_t used = 0;
    int fewest = VD_MAX_PARAMS + 1;
    memset(out, 0, sizeof(*out));
    /* As in OpenAPI, a concrete path wins over a templated one: /v1/items/lookup is never
     * item "lookup". Only the patterns with the fewest parameters that match take part. */
    for (size_t i = 0; i < n; i++) {
        vd_match m;
        memset(&m, 0, sizeof(m));
        if (pattern_matches(table[i].pattern, path, &m) && m.nparams < fewest)
            fewest = m.nparams;
    }
    for (size_t i = 0; i < n; i++) {
        vd_match m;
        memset(&m, 0, sizeof(m));
        if (!pattern_matches(table[i].pattern, path, &m) || m.nparams != fewest)
            continue;
        if (strcmp(table[i].method, method) == 0 ||
            (strcmp(method, "HEAD") == 0 && strcmp(table[i].method, "GET") == 0)) {
            *out = m;
            out->route_index = i;
            return VD_MATCH_FOUND;
        }
        if (used + strlen(table[i].method) + 3 < sizeof(out->allow))
            used += (size_t)snprintf(out->allow + used, sizeof(out->allow) - used, "%s%s",
                                     path_seen ? ", " : "", table[i].method);
        path_seen = true;
    }
    return path_seen ? VD_MATCH_BAD_METHOD : VD_MATCH_NOT_FOUND;
}
