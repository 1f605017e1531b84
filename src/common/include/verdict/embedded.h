/* embedded.h - files compiled into the binary by cmake/embed.cmake: the SQL migrations of
 * sql/ (in file-name order), the SQL function files of sql/functions/ (in name order), the OpenAPI
 * documents of openapi/ and the operator console of ui/. Read-only data. */
#ifndef VERDICT_EMBEDDED_H
#define VERDICT_EMBEDDED_H

#include <stddef.h>

typedef struct vd_embedded_file {
    const char *name;
    const char *data; /* NUL-terminated */
    size_t len;
} vd_embedded_file;

extern const vd_embedded_file vd_migrations[];
extern const size_t vd_migration_count;
/* A file of sql/functions/: every overload of one function, CREATE OR REPLACE. */
typedef struct vd_sql_function {
    const char *name; /* "verdict_ts" */
    const char *data; /* NUL-terminated */
    size_t len;
    const char *md5; /* of the file's bytes, hex */
} vd_sql_function;

extern const vd_sql_function vd_sql_functions[];
extern const size_t vd_sql_function_count;
extern const vd_embedded_file vd_openapi_yaml;
extern const vd_embedded_file vd_openapi_json;

/* A file of the operator console (ui/), served under /ui/. */
typedef struct vd_ui_file {
    const char *name; /* "app.js" */
    const char *data; /* NUL-terminated (text files only) */
    size_t len;
    const char *etag; /* "\"<md5 hex>\"", quoted as the header wants it */
} vd_ui_file;

extern const vd_ui_file vd_ui_files[];
extern const size_t vd_ui_file_count;

#endif
