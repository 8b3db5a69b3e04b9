/* iheap.c: the indexed binary min-heap of iheap.h. */
#include "iheap.h"

#include <stdlib.h>
#include <string.h>

#include "../common.h"

void bd_iheap_init(bd_iheap *h, bd_iheap_less less, const void *ctx)
{
    memset(h, 0, sizeof *h);
    h->less = less;
    h->ctx = ctx;
}

void bd_iheap_clear(bd_iheap *h)
{
    free(h->items);
    free(h->slot);
    memset(h, 0, sizeof *h);
}

int bd_iheap_contains(const bd_iheap *h, size_t id)
{
    return id < h->n_ids && h->slot[id] != BD_IHEAP_ABSENT;
}

static void place(bd_iheap *h, size_t at, size_t id)
{
    h->items[at] = id;
    h->slot[id] = at;
}

static void sift_up(bd_iheap *h, size_t at)
{
    size_t id = h->items[at];
    while (at > 0) {
        size_t parent = (at - 1) / 2;
        if (!h->less(h->ctx, id, h->items[parent]))
            break;
        place(h, at, h->items[parent]);
        at = parent;
    }
    place(h, at, id);
}

static void sift_down(bd_iheap *h, size_t at)
{
    size_t id = h->items[at];
    for (;;) {
        size_t child = 2 * at + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && h->less(h->ctx, h->items[child + 1], h->items[child]))
            child++;
        if (!h->less(h->ctx, h->items[child], id))
            break;
        place(h, at, h->items[child]);
        at = child;
    }
    place(h, at, id);
}

void bd_iheap_update(bd_iheap *h, size_t id)
{
    if (id >= h->n_ids) {
        size_t n = h->n_ids ? h->n_ids : 16;
        while (n <= id)
            n *= 2;
        h->slot = bd_xrealloc(h->slot, n * sizeof *h->slot);
        for (size_t k = h->n_ids; k < n; k++)
            h->slot[k] = BD_IHEAP_ABSENT;
        h->n_ids = n;
    }
    size_t at = h->slot[id];
    if (at == BD_IHEAP_ABSENT) {
        if (h->n == h->cap) {
            h->cap = h->cap ? 2 * h->cap : 16;
            h->items = bd_xrealloc(h->items, h->cap * sizeof *h->items);
        }
        at = h->n++;
        place(h, at, id);
    }
    sift_up(h, at);
    sift_down(h, h->slot[id]);
}

void bd_iheap_remove(bd_iheap *h, size_t id)
{
    if (!bd_iheap_contains(h, id))
        return;
    size_t at = h->slot[id], last = h->items[--h->n];
    h->slot[id] = BD_IHEAP_ABSENT;
    if (at == h->n)
        return;
    place(h, at, last);
    sift_up(h, at);
    sift_down(h, h->slot[last]);
}

size_t bd_iheap_top(const bd_iheap *h)
{
    return h->items[0];
}

size_t bd_iheap_pop(bd_iheap *h)
{
    size_t id = h->items[0];
    bd_iheap_remove(h, id);
    return id;
}
