/* iheap.h: an indexed binary min-heap of small dense ids (0 .. n-1), for
 * schedulers that keep many items ordered by a key that changes one item at
 * a time (spc's testers by their LCB). Each id is in the heap at most once;
 * its slot is tracked, so a changed key is re-sifted in O(log n) and an id
 * is removed in O(log n). The order is the caller's `less`: the heap never
 * looks at keys itself. */
#ifndef BD_IHEAP_H
#define BD_IHEAP_H

#include <stddef.h>

typedef int (*bd_iheap_less)(const void *ctx, size_t a, size_t b);

typedef struct bd_iheap {
    size_t *items;  /* heap order: items[0] is the least */
    size_t n, cap;
    size_t *slot;   /* slot[id]: index into items, or BD_IHEAP_ABSENT */
    size_t n_ids;   /* ids the slot table covers */
    bd_iheap_less less;
    const void *ctx;
} bd_iheap;

#define BD_IHEAP_ABSENT ((size_t)-1)

void bd_iheap_init(bd_iheap *h, bd_iheap_less less, const void *ctx);
void bd_iheap_clear(bd_iheap *h);
int bd_iheap_contains(const bd_iheap *h, size_t id);
/* Inserts id, or re-sifts it if present (its key changed). */
void bd_iheap_update(bd_iheap *h, size_t id);
void bd_iheap_remove(bd_iheap *h, size_t id);
/* The least id; the heap must not be empty. */
size_t bd_iheap_top(const bd_iheap *h);
size_t bd_iheap_pop(bd_iheap *h);

#endif
