/* fuzz_templates.c - libFuzzer target for the failure-template miner and the evidence
 * classifier (src/service/templates.c, template_class.c): any bytes are parsed, rendered,
 * matched against their own template, classified and added to an in-memory store that lives
 * across inputs. Invariants: a message's own template splits into its token count and matches
 * it fully; the store answers an id within its size. Build (like scripts/fuzz.sh):
 *   clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -D_DEFAULT_SOURCE
 *     -Isrc/common/include -Isrc/service/include -Isrc tests/fuzz/fuzz_templates.c
 *     src/service/templates.c src/service/template_class.c */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/templates.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vd_tpl_mem store;
    static vd_tpl_msg m;
    char tpl[VD_TPL_TEXT_MAX + 1], why[256];
    char *text = malloc(size + 1);
    int64_t id = 0;
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    vd_tpl_parse(text, &m);
    if (m.n < 0 || m.n > VD_TPL_TOKENS)
        abort();
    vd_tpl_render(&m, tpl, sizeof(tpl));
    if (m.n > 0 && vd_tpl_similarity(tpl, &m) < 0.99)
        abort();
    (void)vd_tpl_classify(NULL, &m, why, sizeof(why));
    if (store.n > 5000)
        vd_tpl_mem_cleanup(&store);
    if (vd_tpl_mem_add(&store, &m, &id, tpl, sizeof(tpl)) && (id < 1 || (size_t)id > store.n))
        abort();
    free(text);
    return 0;
}
