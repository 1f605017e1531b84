/* store_calls_service.c - must not link: a program of the store and common layers alone that
 * calls a service function, as a store file would (tests/CMakeLists.txt, layers.build_*). */
#include "verdict/store.h"

/* a service function, declared by hand as an upward call would have to */
vd_error vd_job_fence(const void *snap);

int main(void)
{
    return (int)vd_job_fence(NULL);
}
