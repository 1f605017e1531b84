/* embedded.h - files compiled into the binary by cmake/embed.cmake: the SQL migrations of
 * sql/ (in file-name order) and the OpenAPI documents of openapi/. Read-only data. */
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
extern const vd_embedded_file vd_openapi_yaml;
extern const vd_embedded_file vd_openapi_json;

#endif
