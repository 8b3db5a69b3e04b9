/* test_idmap.c: the schedulers' id -> pointer map (server/sched/idmap.c),
 * above all removal, which shifts later entries back instead of leaving
 * tombstones: checked against a plain array under random puts and removes
 * of clustered keys (sequential ids collide in runs after the mix). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "server/sched/idmap.h"

#define KEYS 5000

static void *value_of(int64_t key)
{
    return (void *)(uintptr_t)(key * 2 + 1);
}

Test(idmap, removal_keeps_every_other_key_reachable)
{
    bd_idmap m = {0};
    static unsigned char present[KEYS + 1];
    unsigned int seed = 12345;
    size_t count = 0;
    for (int op = 0; op < 200000; op++) {
        int64_t key = 1 + rand_r(&seed) % KEYS;
        if (rand_r(&seed) % 3) {
            bd_idmap_put(&m, key, value_of(key));
            count += !present[key];
            present[key] = 1;
        } else {
            bd_idmap_remove(&m, key);
            count -= present[key];
            present[key] = 0;
        }
        if (op % 997 == 0) {
            cr_assert_eq(m.count, count);
            for (int64_t k = 1; k <= KEYS; k++)
                cr_assert_eq(bd_idmap_get(&m, k), present[k] ? value_of(k) : NULL, "key %lld after op %d",
                             (long long)k, op);
        }
    }
    bd_idmap_clear(&m);
}

Test(idmap, remove_of_an_absent_key_or_an_empty_map_is_a_no_op)
{
    bd_idmap m = {0};
    bd_idmap_remove(&m, 7);
    cr_expect_eq(m.count, 0);
    bd_idmap_put(&m, 7, value_of(7));
    bd_idmap_remove(&m, 8);
    bd_idmap_remove(&m, 0);
    cr_expect_eq(m.count, 1);
    cr_expect_eq(bd_idmap_get(&m, 7), value_of(7));
    bd_idmap_remove(&m, 7);
    cr_expect_eq(m.count, 0);
    cr_expect_null(bd_idmap_get(&m, 7));
    bd_idmap_clear(&m);
}

/* A map whose keys come and go (trials of the running brackets) does not
 * grow with the keys it has ever seen. */
Test(idmap, a_sliding_window_of_keys_keeps_the_table_small)
{
    bd_idmap m = {0};
    for (int64_t k = 1; k <= 1000000; k++) {
        bd_idmap_put(&m, k, value_of(k));
        if (k > 100)
            bd_idmap_remove(&m, k - 100);
    }
    cr_expect_eq(m.count, 100);
    cr_expect_leq(m.cap, 256);
    for (int64_t k = 1; k <= 1000000; k++)
        cr_assert_eq(bd_idmap_get(&m, k), k > 1000000 - 100 ? value_of(k) : NULL);
    bd_idmap_clear(&m);
}
