/* acq_space.h: the bridge from a search space (server/space.h) to the
 * acquisition optimiser's description (acq.h), so that acq.c itself needs
 * no JSON: one coordinate per parameter in bd_space_encode's code, floats
 * continuous, ints on their grid, categoricals by choice, and the activity
 * rule of the space's "when" conditions.
 *
 * Why a separate file: acq.c stays a numerical routine over the unit cube
 * (testable with any description), while the conditions, whose values are
 * JSON scalars, are compiled here once into per-choice tables so that the
 * activity of a candidate costs O(number of conditions), not a JSON decode.
 *
 * Invariants: for every u on the grid, mask[i] equals
 * bd_space_is_active(space, i, bd_space_decode(space, u)).
 * Cost: building O(sum of conditions x choices); activity O(conditions). */
#ifndef BD_MODEL_ACQ_SPACE_H
#define BD_MODEL_ACQ_SPACE_H

#include "../common.h"
#include "../space.h"
#include "acq.h"

typedef struct bd_acq_space bd_acq_space;

/* Compiles space. *out is new (bd_acq_space_free) and keeps no reference
 * to space. BD_EINVAL when the space has more than BD_ACQ_MAX_DIM (100)
 * parameters. */
int bd_acq_space_new(const bd_space *space, bd_acq_space **out, bd_err *err) BD_MUST_CHECK;
void bd_acq_space_free(bd_acq_space *as); /* NULL-safe */
/* The heap as holds, on the safe side (0 for NULL). */
size_t bd_acq_space_held_bytes(const bd_acq_space *as);

/* Fills p's d, dims and active/active_ctx (borrowed from as, valid while it
 * lives); the caller sets score and score_ctx. */
void bd_acq_space_problem(const bd_acq_space *as, bd_acq_problem *p);

#endif
