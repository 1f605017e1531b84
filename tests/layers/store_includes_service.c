/* store_includes_service.c - must not compile: the store includes a service header
 * (tests/CMakeLists.txt, layers.build_*). */
#include "verdict/jobs.h"

int layers_probe(void);
int layers_probe(void)
{
    return 0;
}
