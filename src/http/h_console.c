/* h_console.c - what the operator console needs beyond the resource endpoints: its own files
 * (ui/, embedded at build time, served under /ui/ with a strict Content-Security-Policy and
 * ETag revalidation), the caller's role (GET /v1/whoami) so it shows only the actions the key
 * may use, and the change feed of transitions (GET /v1/transitions) for live activity. */
#include "http_internal.h"

#include <stdlib.h>
#include <string.h>

#include "verdict/embedded.h"
#include "verdict/store.h"
#include "verdict/store/items.h"

vd_error vd_h_whoami(vd_ctx *ctx)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "actor", ctx->actor ? ctx->actor : "anonymous");
    cJSON_AddStringToObject(o, "role", vd_role_name(ctx->role));
    return vd_respond_json(ctx, 200, o);
}

vd_error vd_h_transitions(vd_ctx *ctx)
{
    int64_t after = 0, limit = 0;
    const char *fs = NULL;
    char *out = NULL;
    vd_conn *c = NULL;
    vd_error rc = vd_query_int(ctx, "after", 0, INT64_MAX, 0, &after);
    if (rc || (rc = vd_query_int(ctx, "limit", 1, 1000, 100, &limit)) ||
        (rc = vd_query_str(ctx, "flow_step_id", 200, &fs)) || (rc = vd_ctx_db(ctx, &c)))
        return rc;
    rc = vd_store_transitions_feed(c, after, fs, limit, &out);
    return rc ? vd_store_fail(ctx, rc, NULL) : vd_respond_owned(ctx, out);
}

/* The Content-Type of a console file, by its extension. */
static const char *ui_ctype(const char *name)
{
    static const struct {
        const char *ext, *ctype;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".svg", "image/svg+xml"},
    };
    const char *dot = strrchr(name, '.');
    for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++) {
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].ctype;
    }
    return "application/octet-stream";
}

/* Answer an embedded file: 304 when the caller's If-None-Match names its ETag. */
static vd_error serve_ui(vd_ctx *ctx, const char *name)
{
    const char *inm =
        MHD_lookup_connection_value(ctx->conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
    for (size_t i = 0; i < vd_ui_file_count; i++) {
        const vd_ui_file *f = &vd_ui_files[i];
        if (strcmp(f->name, name) != 0)
            continue;
        ctx->console = true;
        ctx->etag = f->etag;
        if (inm && strstr(inm, f->etag))
            return vd_respond_text(ctx, 304, ui_ctype(name), "", 0);
        return vd_respond_text(ctx, 200, ui_ctype(name), f->data, f->len);
    }
    return vd_fail(ctx, VD_ERR_NOT_FOUND, NULL, "the console has no file '%s'", name);
}

vd_error vd_h_ui_redirect(vd_ctx *ctx)
{
    ctx->location = "/ui/";
    return vd_respond_text(ctx, 308, "text/plain; charset=utf-8", "", 0);
}

vd_error vd_h_ui_index(vd_ctx *ctx)
{
    return serve_ui(ctx, "index.html");
}

vd_error vd_h_ui_asset(vd_ctx *ctx)
{
    return serve_ui(ctx, ctx->match.params[0]);
}
