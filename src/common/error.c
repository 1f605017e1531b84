/* error.c - lookups into the VD_ERROR_MAP table (verdict/error.h).
 * Pure data; depends on nothing else in verdict. */
#include "verdict/error.h"

struct vd_error_row {
    const char *code;
    int status;
    bool retryable;
    const char *hint;
};

static const struct vd_error_row rows[VD_ERR__MAX] = {[VD_OK] = {"ok", 200, false, ""},
#define VD__ERR_ROW(name, code, status, retryable, hint)                                           \
    [VD_ERR_##name] = {code, status, retryable, hint},
                                                      VD_ERROR_MAP(VD__ERR_ROW)
#undef VD__ERR_ROW
};

static const struct vd_error_row *row_of(vd_error err)
{
    if ((int)err < 0 || err >= VD_ERR__MAX)
        return &rows[VD_ERR_INTERNAL];
    return &rows[err];
}

const char *vd_error_code(vd_error err)
{
    return row_of(err)->code;
}

int vd_error_status(vd_error err)
{
    return row_of(err)->status;
}

bool vd_error_retryable(vd_error err)
{
    return row_of(err)->retryable;
}

const char *vd_error_hint(vd_error err)
{
    return row_of(err)->hint;
}
