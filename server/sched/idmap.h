/* idmap.h: an int64 -> pointer hash map (open addressing, linear probing)
 * for schedulers that look trials and configs up by id in O(1) expected
 * time. Keys are ids handed out by the engine and must be non-zero (0 marks
 * an empty slot). The map borrows the pointers it stores; it never frees them. */
#ifndef BD_IDMAP_H
#define BD_IDMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct bd_idmap_slot {
    int64_t key; /* 0 = empty */
    void *value; /* borrowed */
} bd_idmap_slot;

typedef struct bd_idmap {
    bd_idmap_slot *slots; /* owned; capacity is a power of two (or 0 before the first put) */
    size_t cap;
    size_t count;
} bd_idmap;

/* An empty map needs no allocation: bd_idmap m = {0} is valid. */
void bd_idmap_init(bd_idmap *m);
/* Frees the slot array (not the values). The map is empty and reusable after. */
void bd_idmap_clear(bd_idmap *m);
/* Inserts or replaces key -> value. key != 0. */
void bd_idmap_put(bd_idmap *m, int64_t key, void *value);
/* Removes key if present (its value is not freed). */
void bd_idmap_remove(bd_idmap *m, int64_t key);
/* The value stored for key (borrowed), or NULL. */
void *bd_idmap_get(const bd_idmap *m, int64_t key);

#endif
