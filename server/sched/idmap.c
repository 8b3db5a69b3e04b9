/* idmap.c: int64 -> pointer hash map (see idmap.h). Linear probing over a
 * power-of-two table kept at most half full; keys are mixed with the
 * splitmix64 finalizer so sequential ids spread over the table. Removal
 * shifts the entries after the hole back (no tombstones), so a map whose
 * keys come and go, such as the trials of the brackets still running, is
 * sized by the most keys it held at once, not by all it ever saw (it never
 * shrinks). */
#include "idmap.h"

#include <assert.h>
#include <stdlib.h>

#include "../common.h"

static size_t slot_of(int64_t key, size_t cap)
{
    uint64_t z = (uint64_t)key;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return (size_t)(z & (cap - 1));
}

void bd_idmap_init(bd_idmap *m)
{
    m->slots = NULL;
    m->cap = 0;
    m->count = 0;
}

void bd_idmap_clear(bd_idmap *m)
{
    free(m->slots);
    bd_idmap_init(m);
}

static void grow(bd_idmap *m)
{
    size_t old_cap = m->cap;
    bd_idmap_slot *old = m->slots;
    m->cap = old_cap ? 2 * old_cap : 64;
    m->slots = bd_xcalloc(m->cap, sizeof *m->slots);
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].key)
            continue;
        size_t j = slot_of(old[i].key, m->cap);
        while (m->slots[j].key)
            j = (j + 1) & (m->cap - 1);
        m->slots[j] = old[i];
    }
    free(old);
}

void bd_idmap_put(bd_idmap *m, int64_t key, void *value)
{
    assert(key != 0);
    if (2 * (m->count + 1) > m->cap)
        grow(m);
    size_t j = slot_of(key, m->cap);
    while (m->slots[j].key && m->slots[j].key != key)
        j = (j + 1) & (m->cap - 1);
    if (!m->slots[j].key) {
        m->slots[j].key = key;
        m->count++;
    }
    m->slots[j].value = value;
}

void *bd_idmap_get(const bd_idmap *m, int64_t key)
{
    if (!m->cap || !key)
        return NULL;
    size_t j = slot_of(key, m->cap);
    while (m->slots[j].key) {
        if (m->slots[j].key == key)
            return m->slots[j].value;
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

void bd_idmap_remove(bd_idmap *m, int64_t key)
{
    if (!m->cap || !key)
        return;
    size_t mask = m->cap - 1, hole = slot_of(key, m->cap);
    while (m->slots[hole].key != key) {
        if (!m->slots[hole].key)
            return;
        hole = (hole + 1) & mask;
    }
    /* Moves back every later entry of the run whose home slot does not lie
     * cyclically in (hole, j]: a lookup of it would otherwise stop at the hole. */
    for (size_t j = (hole + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t home = slot_of(m->slots[j].key, m->cap);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            m->slots[hole] = m->slots[j];
            hole = j;
        }
    }
    m->slots[hole].key = 0;
    m->slots[hole].value = NULL;
    m->count--;
}
