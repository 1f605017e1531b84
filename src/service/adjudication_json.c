/* adjudication_json.c - the §5 encoder of an adjudication (session-outcome.md): the answer
 * object both adjudication endpoints serve and the job keeps. cJSON and the adjudicator's
 * plain structs only (no store, no HTTP), so the fuzzer links it alone. */
#include "verdict/outcomes.h"

static bool add_string(cJSON *o, const char *key, const char *value)
{
    return cJSON_AddStringToObject(o, key, value ? value : "") != NULL;
}

static bool add_bool(cJSON *o, const char *key, bool value)
{
    return cJSON_AddBoolToObject(o, key, value) != NULL;
}

static bool add_warnings(cJSON *o, const vd_adjudication *a)
{
    cJSON *arr = cJSON_AddArrayToObject(o, "warnings");
    if (arr == NULL)
        return false;
    for (size_t i = 0; i < a->n_warnings; i++) {
        cJSON *w = cJSON_CreateString(a->warnings[i] ? a->warnings[i] : "");
        if (w == NULL || !cJSON_AddItemToArray(arr, w)) {
            cJSON_Delete(w);
            return false;
        }
    }
    return true;
}

cJSON *vd_adjudication_to_json(const vd_adjudication *a)
{
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL && add_string(o, "outcome", vd_session_outcome_name(a->outcome)) &&
              add_bool(o, "success", a->success) && add_bool(o, "needs_retry", a->needs_retry) &&
              add_string(o, "retry_reason", vd_retry_reason_name(a->retry_reason)) &&
              add_string(o, "content_state", vd_content_state_name(a->content_state)) &&
              add_string(o, "subtype", vd_subtype_label_name(a->subtype)) &&
              add_string(o, "cli_subtype", vd_cli_subtype_name(a->cli_subtype)) &&
              add_string(o, "infra_exit", vd_infra_exit_name(a->infra_exit)) &&
              add_bool(o, "write_evidence", a->write_evidence) &&
              add_string(o, "result_text", a->result_text) && add_warnings(o, a);
    if (!ok) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}
