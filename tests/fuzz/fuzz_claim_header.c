/* fuzz_claim_header.c - libFuzzer target for the Verdict-Claim header parse
 * (vd_claim_header_parse, src/http/input.c): any bytes (up to the first NUL) either parse to
 * a job id in [1, 10^18) and a UUID that the header spells exactly, or are refused; no overflow
 * (UBSan), no read past the text (ASan). Built and run bounded by scripts/fuzz.sh. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http/input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *h = malloc(size + 1);
    char token[VD_UUID_SIZE] = "";
    int64_t job = -1;
    if (!h)
        return 0;
    memcpy(h, data, size);
    h[size] = '\0';
    if (vd_claim_header_parse(h, &job, token)) {
        char again[80];
        snprintf(again, sizeof(again), "%lld:%s", (long long)job, token);
        if (job < 1 || job > VD_MAX_ID || !vd_is_uuid(token) || strcmp(again, h) != 0)
            abort(); /* what was read is not what the header says */
    } else if (job != -1 || token[0]) {
        abort(); /* a refusal wrote its outputs */
    }
    free(h);
    return 0;
}
