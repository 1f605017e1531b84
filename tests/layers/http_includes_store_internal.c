/* http_includes_store_internal.c - must not compile: the store's private header (its
 * statements, libpq) is not http's (tests/CMakeLists.txt, layers.build_*). */
#include "store_internal.h"

int layers_probe(void);
int layers_probe(void)
{
    return 0;
}
