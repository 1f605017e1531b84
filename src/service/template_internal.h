/* template_internal.h - shared by templates.c (the miner) and template_class.c (the evidence
 * classifier): which template tokens are masks and which are punctuation. Service layer
 * only. */
#ifndef VERDICT_TEMPLATE_INTERNAL_H
#define VERDICT_TEMPLATE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* t[0..n) is one of the masks: <*> <num> <q> <path> <url>. */
bool vd_tpl_is_mask(const char *t, size_t n);
/* t[0..n) is one punctuation token: { } [ ] ( ) , ; = : or an unclosed ". */
bool vd_tpl_is_punct(const char *t, size_t n);

#endif
