/* domain.c - names and parsers of the state machine's words (domain.h), generated from the
 * X-macro tables so that the C lists cannot drift from one another. Pure: no I/O, no state. */
#include "verdict/domain.h"

#include <stddef.h>
#include <string.h>

#define VD_DOMAIN_NAME_ROW(name, str) [name] = str,

static const char *const item_states[] = {VD_ITEM_STATE_MAP(VD_DOMAIN_NAME_ROW)};
static const char *const job_statuses[] = {VD_JOB_STATUS_MAP(VD_DOMAIN_NAME_ROW)};
static const char *const causes[] = {VD_CAUSE_MAP(VD_DOMAIN_NAME_ROW)};
static const char *const dispositions[] = {VD_DISPOSITION_MAP(VD_DOMAIN_NAME_ROW)};

static const char *name_of(const char *const *table, int n, int v)
{
    return v >= 0 && v < n ? table[v] : NULL;
}

/* The index of s in table[0..n), or -1. */
static int index_of(const char *const *table, int n, const char *s)
{
    for (int i = 0; s && i < n; i++) {
        if (strcmp(table[i], s) == 0)
            return i;
    }
    return -1;
}

const char *vd_item_state_name(vd_item_state v)
{
    return name_of(item_states, VD_ITEM__MAX, (int)v);
}

const char *vd_job_status_name(vd_job_status v)
{
    return name_of(job_statuses, VD_JOB__MAX, (int)v);
}

const char *vd_cause_name(vd_cause v)
{
    return name_of(causes, VD_CAUSE__MAX, (int)v);
}

const char *vd_disposition_name(vd_disposition v)
{
    return name_of(dispositions, VD_DISPOSITION__MAX, (int)v);
}

bool vd_item_state_parse(const char *s, vd_item_state *out)
{
    int i = index_of(item_states, VD_ITEM__MAX, s);
    if (i >= 0)
        *out = (vd_item_state)i;
    return i >= 0;
}

bool vd_job_status_parse(const char *s, vd_job_status *out)
{
    int i = index_of(job_statuses, VD_JOB__MAX, s);
    if (i >= 0)
        *out = (vd_job_status)i;
    return i >= 0;
}

bool vd_cause_parse(const char *s, vd_cause *out)
{
    int i = index_of(causes, VD_CAUSE__MAX, s);
    if (i >= 0)
        *out = (vd_cause)i;
    return i >= 0;
}

bool vd_disposition_parse(const char *s, vd_disposition *out)
{
    int i = index_of(dispositions, VD_DISPOSITION__MAX, s);
    if (i >= 0)
        *out = (vd_disposition)i;
    return i >= 0;
}

vd_cause vd_disposition_cause(vd_disposition d)
{
    switch (d) {
    case VD_DISPOSITION_COMPLETE:
        return VD_CAUSE_COMPLETE;
    case VD_DISPOSITION_REJECT_SOURCE:
        return VD_CAUSE_REJECT_SOURCE;
    case VD_DISPOSITION_DEFER_ITEM:
        return VD_CAUSE_DEFER_ITEM;
    case VD_DISPOSITION_FAIL:
        return VD_CAUSE_FAIL;
    case VD_DISPOSITION_SKIP_ITEM:
        return VD_CAUSE_SKIP_ITEM;
    case VD_DISPOSITION_SESSION_OUTCOME:
        return VD_CAUSE_SESSION_OUTCOME;
    case VD_DISPOSITION_REQUEST_REVIEW:
        return VD_CAUSE_REQUEST_REVIEW;
    case VD_DISPOSITION_NONE:
    case VD_DISPOSITION__MAX:
    default:
        return VD_CAUSE_RELEASE;
    }
}
