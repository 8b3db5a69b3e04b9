/* acq_space.c: compiles a bd_space into bd_acq_dim entries and an activity
 * rule (see acq_space.h). A condition "parent in values" becomes, for a
 * categorical parent, a table accept[k] over its choices; for an integer
 * parent, the list of accepted numbers. Values compare as space.c compares
 * them: numbers by value, anything else by json_equal.
 *
 * Invariants: parents precede children (bd_space guarantees it), so one
 * pass in order decides activity, a child of an inactive parent being
 * inactive. Cost: activity O(sum over conditions of the accepted numbers). */
#include "acq_space.h"

#include <math.h>
#include <stdlib.h>


typedef struct cond {
    size_t parent;
    unsigned char *accept; /* categorical parent: one flag per choice (owned) */
    double *nums;          /* integer parent: accepted values (owned) */
    size_t n_nums;
} cond;

typedef struct param_conds {
    size_t n;
    cond *c; /* owned */
} param_conds;

struct bd_acq_space {
    size_t d;
    bd_acq_dim *dims;   /* owned, d entries */
    param_conds *conds; /* owned, d entries */
};

static int value_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

size_t bd_acq_space_held_bytes(const bd_acq_space *as)
{
    if (!as)
        return 0;
    size_t bytes = BD_HEAP_BLOCK(sizeof *as) + BD_HEAP_BLOCK(as->d * sizeof *as->dims) +
                   BD_HEAP_BLOCK(as->d * sizeof *as->conds);
    for (size_t i = 0; i < as->d; i++) {
        bytes += BD_HEAP_BLOCK(as->conds[i].n * sizeof *as->conds[i].c);
        for (size_t c = 0; c < as->conds[i].n; c++) {
            const cond *cd = &as->conds[i].c[c];
            if (cd->accept)
                bytes += BD_HEAP_BLOCK(as->dims[cd->parent].n_choices);
            if (cd->nums)
                bytes += BD_HEAP_BLOCK((cd->n_nums + 1) * sizeof *cd->nums);
        }
    }
    return bytes;
}

void bd_acq_space_free(bd_acq_space *as)
{
    if (!as)
        return;
    for (size_t i = 0; i < as->d; i++) {
        for (size_t c = 0; c < as->conds[i].n; c++) {
            free(as->conds[i].c[c].accept);
            free(as->conds[i].c[c].nums);
        }
        free(as->conds[i].c);
    }
    free(as->conds);
    free(as->dims);
    free(as);
}

int bd_acq_space_new(const bd_space *space, bd_acq_space **out, bd_err *err)
{
    size_t d = bd_space_size(space);
    bd_acq_space *as;
    *out = NULL;
    if (d > BD_ACQ_MAX_DIM)
        return bd_err_set(err, BD_EINVAL, "parameters", "model-based search handles at most %d parameters, not %zu",
                          BD_ACQ_MAX_DIM, d);
    as = bd_xcalloc(1, sizeof *as);
    as->d = d;
    as->dims = bd_xcalloc(d, sizeof *as->dims);
    as->conds = bd_xcalloc(d, sizeof *as->conds);
    for (size_t i = 0; i < d; i++) {
        const bd_param *p = bd_space_param(space, i);
        bd_acq_dim *dm = &as->dims[i];
        if (p->type == BD_PARAM_FLOAT) {
            dm->kind = BD_ACQ_CONTINUOUS;
        } else if (p->type == BD_PARAM_INT) {
            dm->kind = BD_ACQ_INTEGER;
            dm->low = p->low;
            dm->high = p->high;
            dm->log = p->log;
        } else {
            dm->kind = BD_ACQ_CATEGORICAL;
            dm->n_choices = json_array_size(p->choices);
        }
        as->conds[i].n = p->n_conds;
        as->conds[i].c = bd_xcalloc(p->n_conds ? p->n_conds : 1, sizeof(cond));
        for (size_t c = 0; c < p->n_conds; c++) {
            const bd_param *par = bd_space_param(space, p->conds[c].parent);
            const json_t *vals = p->conds[c].values;
            cond *cd = &as->conds[i].c[c];
            cd->parent = p->conds[c].parent;
            if (par->type == BD_PARAM_CATEGORICAL) {
                size_t K = json_array_size(par->choices);
                cd->accept = bd_xcalloc(K, 1);
                for (size_t k = 0; k < K; k++)
                    for (size_t v = 0; v < json_array_size(vals); v++)
                        if (value_equal(json_array_get(par->choices, k), json_array_get(vals, v)))
                            cd->accept[k] = 1;
            } else {
                cd->nums = bd_xcalloc(json_array_size(vals) + 1, sizeof *cd->nums);
                for (size_t v = 0; v < json_array_size(vals); v++)
                    if (json_is_number(json_array_get(vals, v)))
                        cd->nums[cd->n_nums++] = json_number_value(json_array_get(vals, v));
            }
        }
    }
    *out = as;
    return 0;
}

static int cond_holds(const bd_acq_space *as, const cond *cd, const double *u)
{
    const bd_acq_dim *dm = &as->dims[cd->parent];
    double v;
    if (cd->accept) {
        double f = floor(u[cd->parent] * (double)dm->n_choices);
        size_t k = !(f >= 0) ? 0 : f >= (double)dm->n_choices ? dm->n_choices - 1 : (size_t)f;
        return cd->accept[k];
    }
    v = bd_acq_int_value(dm, u[cd->parent]);
    for (size_t k = 0; k < cd->n_nums; k++)
        if (cd->nums[k] == v)
            return 1;
    return 0;
}

static void active(void *ctx, const double *u, unsigned char *mask)
{
    const bd_acq_space *as = ctx;
    for (size_t i = 0; i < as->d; i++) {
        mask[i] = 1;
        for (size_t c = 0; c < as->conds[i].n && mask[i]; c++) {
            const cond *cd = &as->conds[i].c[c];
            if (!mask[cd->parent] || !cond_holds(as, cd, u))
                mask[i] = 0;
        }
    }
}

void bd_acq_space_problem(const bd_acq_space *as, bd_acq_problem *p)
{
    p->d = as->d;
    p->dims = as->dims;
    p->active = active;
    p->active_ctx = (void *)as;
}
