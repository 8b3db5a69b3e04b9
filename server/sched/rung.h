/* rung.h: the ranking rule shared by the multi-fidelity schedulers, and an
 * asynchronous rung: the set of (config, loss) results at one budget with an
 * index answering ASHA's question "which is the best result among the top
 * floor(count/eta) that has not been promoted yet?" in O(1), updated in
 * O(log n) per result.
 *
 * Ranking: a smaller loss ranks first; +INFINITY (diverged) and NaN rank
 * last; ties go to the lower config_id, so every ranking is deterministic. */
#ifndef BD_RUNG_H
#define BD_RUNG_H

#include <stddef.h>
#include <stdint.h>

/* 1 if (loss_a, id_a) ranks strictly before (loss_b, id_b). */
int bd_rank_before(double loss_a, int64_t id_a, double loss_b, int64_t id_b);

/* Puts a budget onto the study's resource. Integer resources round down to a
 * whole number (Hyperband paper, Figure 10: r_k = floor(R eta^(k-s))), but
 * never below ceil(r_min) and never above floor(r_max); real resources are
 * clamped to [r_min, r_max]. A 1e-9 relative slack absorbs rounding error, so
 * 81/27*9 gives 27, not 26. */
double bd_budget_round(double x, double r_min, double r_max, int integer);

/* The largest s with r_min * eta^s <= r_max, at most cap (s_max of
 * Hyperband). Exact integer arithmetic when r_min and r_max are whole
 * numbers (floating-point log(243)/log(3) is 4.9999...), else a 1e-9
 * relative slack. r_min > 0, eta >= 2. */
int bd_budget_levels(double r_min, double r_max, unsigned eta, int cap);

/* eta^k in double (exact while below 2^53). */
double bd_pow(unsigned eta, int k);

typedef struct bd_rung_entry {
    int64_t config_id;
    int64_t trial_id; /* the completed trial that produced loss */
    double loss;
    unsigned char in_top;   /* among the best floor(count/eta) right now */
    unsigned char promoted; /* a trial of this config exists in the next rung */
} bd_rung_entry;

typedef struct bd_rung_heap {
    bd_rung_entry **v; /* owned array of borrowed entries */
    size_t n, cap;
} bd_rung_heap;

/* Invariants: every entry of top ranks before every entry of rest;
 * |top| == floor(count/eta), or floor(count * keep) once keep is set;
 * cand holds every unpromoted in_top entry (plus
 * stale ones below the root, dropped lazily) and its root is always valid. */
typedef struct bd_rung {
    unsigned eta;
    double keep;  /* share of the results that are candidates; 0: 1/eta (the paper) */
    size_t count; /* results added */
    size_t n_promoted;
    bd_rung_heap top;          /* the best floor(count/eta); worst of them at the root */
    bd_rung_heap rest;         /* the others; best at the root */
    bd_rung_heap cand;         /* promotion candidates; best at the root */
    const bd_rung_entry *best; /* best result so far, NULL when empty */
    bd_rung_entry **all;       /* owned entries, in arrival order */
    size_t all_cap;
} bd_rung;

/* eta >= 2. An initialized rung owns nothing until the first add. */
void bd_rung_init(bd_rung *r, unsigned eta);
/* Frees every entry; r may be initialized again. */
void bd_rung_free(bd_rung *r);
/* Adds one result. Returns the entry (borrowed, valid until bd_rung_free). */
bd_rung_entry *bd_rung_add(bd_rung *r, int64_t config_id, int64_t trial_id, double loss);
/* The best unpromoted entry among the top floor(count/eta), or NULL
 * (borrowed). Pure: asking twice gives the same answer. */
const bd_rung_entry *bd_rung_candidate(const bd_rung *r);
/* Sets the share of the results kept as candidates, keep in [1/eta, 1]
 * (0: back to floor(count/eta)), and rebalances: entries that leave the top
 * stop being candidates; promotions already made stand. O(m log n) for m
 * entries moved. */
void bd_rung_set_keep(bd_rung *r, double keep);
/* Ranks every entry again by value(entry, cls) (NaN ranks last, as a
 * diverged result), for a rule whose values all change at once (asha's
 * "learned" promotion: a model refitted across configs); the top and the
 * candidates follow, promotions already made stand. O(n log n). */
void bd_rung_rerank(bd_rung *r, double (*value)(const bd_rung_entry *e, void *cls), void *cls);
/* Ranks the entries in the given order (order[i]: the index, in arrival
 * order, of the i-th best entry; a permutation of 0..count-1): the top and
 * the candidates follow, promotions already made stand. Each entry's loss
 * becomes its position. O(n). */
void bd_rung_reorder(bd_rung *r, const size_t *order);
/* The ranking of a rung with several objectives and constraints
 * (Schmucker et al. 2021, MO-ASHA; docs/ALGORITHMS.md, "MO-ASHA's rung
 * rule"): order[0..n-1] gets the indices of the n results best first.
 * losses: n rows of m minimized values (NaN counts as +INFINITY);
 * violation: NULL (all feasible) or per row 0 when feasible, else > 0.
 * Feasible rows first, by non-dominated rank (model/pareto.h), each front
 * ordered by a greedy epsilon-net (Clarkson's farthest-point order, as
 * Syne Tune's MOASHA: the smallest first objective, then each time the
 * point farthest from those taken, objectives scaled by the front's
 * range; ties to the lower id; rows with a non-finite value last in their
 * front, by id); then the infeasible rows by violation, ties to the lower
 * id. With m = 1 and no violation this is the order of bd_rank_before.
 * A front of more than 1,000 finite members is ordered by bisection of its
 * lexicographic order instead of the net (the first, the last, the
 * middle, the quarter points, ...). Ranks in O(n log n) for m <= 2 (a
 * lexicographic sweep), by peeling fronts in O(n log n) per front for
 * m = 3 and O(m n f) per front of f for m >= 4, O(n) memory; the nets
 * O(m f^2) for a front of f <= 1,000. */
void bd_rung_mo_order(const double *losses, size_t m, const double *violation, const int64_t *ids, size_t n,
                      size_t *order);
/* bd_rung_mo_order exact for the first `need` places only (the places
 * after are some order of the remaining indices): fronts are ranked (m >=
 * 3) and ordered only until need places are filled, and the net of the
 * front that straddles the cut stops at the cut (its greedy picks do not
 * depend on later ones), O(m f p) for p picks of a front of f <= 1,000. */
void bd_rung_mo_order_top(const double *losses, size_t m, const double *violation, const int64_t *ids, size_t n,
                          size_t need, size_t *order);
/* Ranks r's entries (losses: count rows of m, violation: NULL or count,
 * in arrival order) by bd_rung_mo_order_top up to r's cut (its top, at
 * least the first for r's best), then bd_rung_reorder. Only the top, its
 * order and the best are read from an MO rung, so the decisions are those
 * of the full order; a rung ranked this way takes no bd_rung_set_keep
 * (asha refuses the rules that set one with several objectives). */
void bd_rung_mo_rank(bd_rung *r, const double *losses, size_t m, const double *violation);
/* Marks e (an entry of r) promoted. Idempotent. */
void bd_rung_promote(bd_rung *r, bd_rung_entry *e);
/* The heap r holds (its entries and arrays), for sched.h's held_bytes. O(1). */
size_t bd_rung_held_bytes(const bd_rung *r);

#endif
