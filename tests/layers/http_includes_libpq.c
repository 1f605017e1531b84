/* http_includes_libpq.c - must not compile: libpq's headers reach only the store
 * (tests/CMakeLists.txt, layers.build_*). */
#include <libpq-fe.h>

int layers_probe(void);
int layers_probe(void)
{
    return PQlibVersion();
}
