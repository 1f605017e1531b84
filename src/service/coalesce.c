/* coalesce.c - grouping concurrent requests into one statement (coalesce.h). One mutex guards
 * the groups and the ready list; a group is on the ready list while it has items waiting and
 * a free slot (fewer than max_in_flight statements running), and is freed when it has
 * neither items nor statements. Runners take a group from the ready list, up to max_batch of
 * its oldest items, and run the statement outside the lock. A statement kept (vd_coalescer_keep)
 * goes on after its call returned; its group keeps the slot, and the runners stay (even when
 * stopping) until every kept statement is done, so what it gives back is still served. */
#include "verdict/coalesce.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "verdict/util.h"

typedef struct group {
    char key[VD_COALESCE_GROUP_MAX + 1];
    void **items; /* waiting, oldest first */
    size_t count, cap;
    int in_flight;
    bool ready;               /* on the ready list */
    struct group *next;       /* in the coalescer's list of groups */
    struct group *next_ready; /* on the ready list */
} group;

struct vd_coalescer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    group *groups;
    group *ready_head, *ready_tail;
    bool stopping, stopped;
    int kept; /* statements kept in flight beyond their call (vd_coalescer_keep) */
    int max_batch, max_in_flight, nthreads;
    /* groups whose statements take fewer items than max_batch (vd_coalescer_cap) */
    struct {
        char key[VD_COALESCE_GROUP_MAX + 1];
        int max_batch;
    } caps[VD_COALESCE_CAPS];
    int ncaps;
    vd_coalesce_fn fn;
    void *arg;
    pthread_t *threads;
    vd_coalesce_stats stats;
};

static void push_ready(vd_coalescer *c, group *g)
{
    g->ready = true;
    g->next_ready = NULL;
    if (c->ready_tail)
        c->ready_tail->next_ready = g;
    else
        c->ready_head = g;
    c->ready_tail = g;
    pthread_cond_signal(&c->cv);
}

static group *pop_ready(vd_coalescer *c)
{
    group *g = c->ready_head;
    c->ready_head = g->next_ready;
    if (!c->ready_head)
        c->ready_tail = NULL;
    g->ready = false;
    g->next_ready = NULL;
    return g;
}

/* Ready again when items wait and a slot is free; freed when nothing is left of it. */
static void settle(vd_coalescer *c, group *g)
{
    if (g->count > 0 && !g->ready && g->in_flight < c->max_in_flight) {
        push_ready(c, g);
        return;
    }
    if (g->count > 0 || g->in_flight > 0 || g->ready)
        return;
    for (group **p = &c->groups; *p; p = &(*p)->next) {
        if (*p == g) {
            *p = g->next;
            break;
        }
    }
    free(g->items);
    free(g);
}

/* Take up to max_batch (or g's cap) of g's oldest items into out; how many. */
static size_t take(vd_coalescer *c, group *g, void **out)
{
    size_t max = (size_t)c->max_batch;
    for (int i = 0; i < c->ncaps; i++)
        if (strcmp(c->caps[i].key, g->key) == 0)
            max = (size_t)c->caps[i].max_batch;
    size_t k = g->count < max ? g->count : max;
    memcpy(out, g->items, k * sizeof(*out));
    memmove(g->items, g->items + k, (g->count - k) * sizeof(*g->items));
    g->count -= k;
    return k;
}

static void *runner_main(void *arg)
{
    vd_coalescer *c = arg;
    void **batch = calloc((size_t)c->max_batch, sizeof(*batch));
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->ready_head && !(c->stopping && c->kept == 0))
            pthread_cond_wait(&c->cv, &c->mu);
        if (!c->ready_head) /* stopping, nothing is waiting and nothing kept */
            break;
        group *g = pop_ready(c);
        size_t n = batch ? take(c, g, batch) : 0;
        g->in_flight++;
        settle(c, g); /* another runner may take the rest while a slot is free */
        pthread_mutex_unlock(&c->mu);
        if (n > 0)
            c->fn(c->arg, g->key, batch, n);
        pthread_mutex_lock(&c->mu);
        c->stats.statements += n > 0;
        c->stats.items += (long)n;
        if ((long)n > c->stats.largest)
            c->stats.largest = (long)n;
        g->in_flight--;
        settle(c, g);
        if (!batch) /* out of memory: leave the work to the other runners */
            break;
    }
    pthread_mutex_unlock(&c->mu);
    free(batch);
    return NULL;
}

vd_coalescer *vd_coalescer_start(int runners, int max_batch, int max_in_flight, vd_coalesce_fn fn,
                                 void *arg)
{
    vd_coalescer *c = calloc(1, sizeof(*c));
    if (!c || runners < 1 || max_batch < 1 || max_in_flight < 1) {
        free(c);
        return NULL;
    }
    c->threads = calloc((size_t)runners, sizeof(*c->threads));
    if (!c->threads) {
        free(c);
        return NULL;
    }
    c->max_batch = max_batch;
    c->max_in_flight = max_in_flight;
    c->fn = fn;
    c->arg = arg;
    pthread_mutex_init(&c->mu, NULL);
    vd_cond_init(&c->cv);
    for (int i = 0; i < runners; i++) {
        if (pthread_create(&c->threads[i], NULL, runner_main, c) != 0)
            break;
        c->nthreads++;
    }
    if (c->nthreads == 0) {
        vd_coalescer_free(c);
        return NULL;
    }
    return c;
}

bool vd_coalescer_cap(vd_coalescer *c, const char *group_key, int max_batch)
{
    bool ok;
    if (strlen(group_key) > VD_COALESCE_GROUP_MAX || max_batch < 1)
        return false;
    pthread_mutex_lock(&c->mu);
    ok = c->ncaps < VD_COALESCE_CAPS && max_batch <= c->max_batch;
    if (ok) {
        memcpy(c->caps[c->ncaps].key, group_key, strlen(group_key) + 1);
        c->caps[c->ncaps++].max_batch = max_batch;
    }
    pthread_mutex_unlock(&c->mu);
    return ok;
}

static group *find_group(vd_coalescer *c, const char *key)
{
    for (group *g = c->groups; g; g = g->next) {
        if (strcmp(g->key, key) == 0)
            return g;
    }
    group *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    memcpy(g->key, key, strlen(key) + 1);
    g->next = c->groups;
    c->groups = g;
    return g;
}

bool vd_coalescer_submit(vd_coalescer *c, const char *group_key, void *item)
{
    bool ok = false;
    if (strlen(group_key) > VD_COALESCE_GROUP_MAX)
        return false;
    pthread_mutex_lock(&c->mu);
    group *g = c->stopping ? NULL : find_group(c, group_key);
    if (g && g->count == g->cap) {
        size_t cap = g->cap ? 2 * g->cap : 16;
        void **items = realloc(g->items, cap * sizeof(*items));
        if (items) {
            g->items = items;
            g->cap = cap;
        }
    }
    if (g && g->count < g->cap) {
        g->items[g->count++] = item;
        ok = true;
    }
    if (g)
        settle(c, g); /* an idle group goes to a runner at once */
    pthread_mutex_unlock(&c->mu);
    return ok;
}

bool vd_coalescer_lead(vd_coalescer *c, const char *group_key)
{
    bool lead = false;
    if (strlen(group_key) > VD_COALESCE_GROUP_MAX)
        return false;
    pthread_mutex_lock(&c->mu);
    group *g = c->stopping ? NULL : find_group(c, group_key);
    if (g && g->count == 0 && !g->ready && g->in_flight == 0) {
        g->in_flight++;
        lead = true;
    }
    if (g && !lead)
        settle(c, g); /* a group it just made is freed again */
    pthread_mutex_unlock(&c->mu);
    return lead;
}

void vd_coalescer_led(vd_coalescer *c, const char *group_key)
{
    pthread_mutex_lock(&c->mu);
    for (group *g = c->groups; g; g = g->next) {
        if (strcmp(g->key, group_key) == 0) {
            g->in_flight--;
            c->stats.statements++;
            c->stats.items++;
            if (c->stats.largest < 1)
                c->stats.largest = 1;
            settle(c, g); /* what waited meanwhile goes to a runner */
            break;
        }
    }
    pthread_mutex_unlock(&c->mu);
}

static group *existing_group(vd_coalescer *c, const char *key)
{
    for (group *g = c->groups; g; g = g->next) {
        if (strcmp(g->key, key) == 0)
            return g;
    }
    return NULL;
}

bool vd_coalescer_keep(vd_coalescer *c, const char *group_key)
{
    pthread_mutex_lock(&c->mu);
    group *g = existing_group(c, group_key); /* it has the caller's statement in flight */
    if (g) {
        g->in_flight++;
        c->kept++;
    }
    pthread_mutex_unlock(&c->mu);
    return g != NULL;
}

/* Put items[0..n) before g's waiting items; false when out of memory. */
static bool give_back(group *g, void **items, size_t n)
{
    if (g->count + n > g->cap) {
        size_t cap = g->cap ? g->cap : 16;
        while (cap < g->count + n)
            cap *= 2;
        void **more = realloc(g->items, cap * sizeof(*more));
        if (!more)
            return false;
        g->items = more;
        g->cap = cap;
    }
    memmove(g->items + n, g->items, g->count * sizeof(*g->items));
    memcpy(g->items, items, n * sizeof(*items));
    g->count += n;
    return true;
}

bool vd_coalescer_done(vd_coalescer *c, const char *group_key, void **items, size_t n)
{
    bool ok = n == 0;
    pthread_mutex_lock(&c->mu);
    group *g = existing_group(c, group_key);
    if (g) {
        ok = n == 0 || give_back(g, items, n);
        g->in_flight--;
        c->kept--;
        settle(c, g); /* what waited (or came back) goes to a runner */
    }
    if (c->kept == 0)
        pthread_cond_broadcast(&c->cv); /* a stopping runner may leave now */
    pthread_mutex_unlock(&c->mu);
    return ok;
}

void vd_coalescer_stop(vd_coalescer *c)
{
    if (!c)
        return;
    pthread_mutex_lock(&c->mu);
    c->stopping = true;
    pthread_cond_broadcast(&c->cv);
    bool join = !c->stopped;
    c->stopped = true;
    pthread_mutex_unlock(&c->mu);
    for (int i = 0; join && i < c->nthreads; i++)
        pthread_join(c->threads[i], NULL);
}

void vd_coalescer_free(vd_coalescer *c)
{
    if (!c)
        return;
    vd_coalescer_stop(c);
    while (c->groups) {
        group *g = c->groups;
        c->groups = g->next;
        free(g->items);
        free(g);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->threads);
    free(c);
}

vd_coalesce_stats vd_coalescer_stats(vd_coalescer *c)
{
    pthread_mutex_lock(&c->mu);
    vd_coalesce_stats s = c->stats;
    pthread_mutex_unlock(&c->mu);
    return s;
}
