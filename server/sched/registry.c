/* registry.c: the built-in schedulers, a static table looked up by name.
 * To add one: write server/sched/<name>.c exporting its ops, declare it
 * below and add it to the table (see README.md). */
#include "sched.h"

#include <pthread.h>
#include <string.h>

extern const struct bd_sched_ops bd_sched_random;
extern const struct bd_sched_ops bd_sched_tpe;
extern const struct bd_sched_ops bd_sched_successive_halving;
extern const struct bd_sched_ops bd_sched_hyperband;
extern const struct bd_sched_ops bd_sched_asha;
extern const struct bd_sched_ops bd_sched_gp_ucb;
extern const struct bd_sched_ops bd_sched_bo_bos;
extern const struct bd_sched_ops bd_sched_rising_bandits;
extern const struct bd_sched_ops bd_sched_spc;
extern const struct bd_sched_ops bd_sched_caps_race;
extern const struct bd_sched_ops bd_sched_nsga2;
#ifdef BD_TEST_SCHEDULERS
extern const struct bd_sched_ops bd_sched_test_sleep;
#endif

static const struct bd_sched_ops *const registry[] = {
    &bd_sched_random,
    &bd_sched_tpe,
    &bd_sched_successive_halving,
    &bd_sched_hyperband,
    &bd_sched_asha,
    &bd_sched_gp_ucb,
    &bd_sched_bo_bos,
    &bd_sched_rising_bandits,
    &bd_sched_spc,
    &bd_sched_caps_race,
    &bd_sched_nsga2,
#ifdef BD_TEST_SCHEDULERS
    &bd_sched_test_sleep, /* test builds only (test_sleep.c) */
#endif
};

#define N_REGISTERED (sizeof registry / sizeof registry[0])

/* sched.h's status values mirror suggest's answers. */
_Static_assert((int)BD_STATUS_RUNNING == (int)BD_SUGGEST_TRIAL && (int)BD_STATUS_WAITING == (int)BD_SUGGEST_WAIT &&
                   (int)BD_STATUS_DONE == (int)BD_SUGGEST_DONE,
               "status and suggest answers differ");

const struct bd_sched_ops *bd_sched_find(const char *name)
{
    for (size_t i = 0; i < N_REGISTERED; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return registry[i];
    return NULL;
}

static char names[256];

static void build_names(void)
{
    for (size_t i = 0; i < N_REGISTERED; i++) {
        if (i)
            strcat(names, ", ");
        strcat(names, registry[i]->name);
    }
}

const char *bd_sched_names(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, build_names);
    return names;
}
