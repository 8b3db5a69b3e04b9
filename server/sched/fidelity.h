/* fidelity.h: how well a study's low fidelities rank its configs by their
 * final loss, measured from the study's own results, and the bracket and
 * cut decisions that measure drives (asha's option "fidelity": "measured";
 * docs/SCHEDULERS.md, tests/bench/README-auto.md).
 *
 * Levels. A study with resource [r_min, r_max] and reduction factor eta has
 * levels i = 0..L at budgets r_min eta^i (L = s_max, rung.h's
 * bd_budget_levels), the top level at r_max. ASHA's bracket s starts its
 * configs at level s; bracket L trains every config in full.
 *
 * The estimate. For each level i < L, Kendall's tau-b between the loss at
 * level i and the final loss, over the configs of the full-fidelity bracket
 * (bracket L) that reached r_max: their losses at the lower levels are
 * measurements taken on the way, before anything was decided about them,
 * so the pairs are a sample of the study's configs with no selection by
 * the ranking being judged (configs promoted by a cut would understate it:
 * range restriction). Its standard error is that of tau under independence,
 * sqrt(2 (2n + 5) / (9 n (n - 1))) (Kendall 1938), which is the larger one,
 * so the estimate errs on the side of trusting less. The trust of level i is
 * the Pearson correlation a bivariate normal with the lower bound tau - se
 * would have, sin(pi/2 max(0, tau - se)) (Greiner's relation), in [0, 1];
 * unknown (negative) below BD_FID_MIN_PAIRS pairs.
 *
 * The decisions (bd_fid_plan):
 * - cut: the rungs at level i keep the top eta^-t_i of their results as
 *   candidates (t_i the trust): 1/eta (the paper) when level i ranks the
 *   final losses perfectly, everything when it ranks them no better than
 *   chance, where a cut drops configs at random and passing them on costs
 *   only the epochs a full training would spend anyway;
 * - bracket: the bracket s whose configs cost least per unit of selection,
 *   E_s = N_eff / (N C_s): a config entering bracket s costs
 *   C_s = sum_j P_j (b_j - b_{j-1}) budget units (P_j the share reaching
 *   level j under the cuts above), N = 1 / P_L configs enter per config
 *   trained in full, and the ranking screens them as well as N_eff =
 *   1 + (N - 1) prod_j t_j configs would be screened by a perfect one
 *   (N_eff = N when every level it passes ranks perfectly, 1 when one
 *   ranks by chance). The full-fidelity bracket scores 1 / r_max; ties go
 *   to the higher s. An unknown trust counts as 1 (the paper's ASHA) until
 *   measured;
 * - share: the full-fidelity bracket is always present. It takes a new
 *   config whenever its share of the budget committed so far is below
 *   phi = 1 - t_s (t_s the trust of the chosen bracket's entry level;
 *   1/2 while that is unknown: no evidence either way), and every config
 *   when the chosen bracket is itself the full-fidelity one. So a study
 *   whose first epochs mislead ends up training in full, and one whose
 *   first epochs rank well spends little on the check.
 *
 * Pure functions of their inputs (the asha scheduler feeds them its
 * events), so a replay decides alike (sched.h). */
#ifndef BD_FIDELITY_H
#define BD_FIDELITY_H

#include <stddef.h>

#define BD_FID_MAX_LEVELS 64
#define BD_FID_MIN_PAIRS 5 /* pairs before a level's trust is known (se 0.41 at 5) */

/* Kendall's tau-b over pairs added one at a time, O(n) per pair. */
typedef struct bd_fid_tau {
    double *x, *y; /* owned */
    size_t n, cap;
    double s;         /* sum over pairs of sign(dx) sign(dy) */
    double ties_x, ties_y; /* pairs tied in x, in y */
} bd_fid_tau;

void bd_fid_tau_free(bd_fid_tau *t);
/* Adds one pair; NaN ranks as +INFINITY (diverged), equal values tie. */
void bd_fid_tau_add(bd_fid_tau *t, double x, double y);
/* tau-b (NAN below 2 pairs or when one side is all ties) and its standard
 * error under independence (NAN below 2 pairs). */
double bd_fid_tau_value(const bd_fid_tau *t);
double bd_fid_tau_se(size_t n);

/* The trust of a level from its tau, se and pair count: sin(pi/2 max(0,
 * tau - se)), or -1 (unknown) below BD_FID_MIN_PAIRS pairs or for a NAN
 * tau. */
double bd_fid_trust(double tau, double se, size_t n);

/* The share a rung of a level of trust t keeps: eta^-t; 1/eta when t is
 * unknown (< 0). */
double bd_fid_keep(unsigned eta, double t);

/* E_s above, for bracket s of levels 0..L with budgets b[0..L] and trusts
 * t[0..L-1] (unknown: counted as 1). */
double bd_fid_score(unsigned eta, int L, const double *b, const double *t, int s);

/* The plan for the next new config among brackets s_min..L: *chosen is the
 * cheapest bracket per unit of selection, *phi the share of the committed
 * budget the full-fidelity bracket is owed; the return value the bracket
 * the config goes to: L when spent_full < phi * spent_all (or the chosen
 * bracket is L), else *chosen. */
int bd_fid_plan(unsigned eta, int L, int s_min, const double *b, const double *t, double spent_full,
                double spent_all, int *chosen, double *phi);

/* "fidelity": "winners". The keep share a cut at a level needs, from the
 * pairs (x: loss at the level, y: final loss) of the full-fidelity
 * bracket's configs: the winners are the m = max(1, floor(n eta^-above))
 * configs of lowest final loss (above = L - i, the levels still to pass: a
 * bracket entering at level i sends that share of its configs to r_max, so
 * these are the configs its cut must keep); r their worst rank at the level
 * (ties counted ahead); the share r / (n + 1), clamped to [1/eta, 1]. With
 * n exchangeable configs, a new winner ranks within the worst of the m seen
 * with probability m / (m + 1), and a perfect ranking gives at most
 * m / (n + 1) < 1/eta: the paper's cut. NAN below BD_FID_MIN_PAIRS pairs. */
double bd_fid_winner_keep(const bd_fid_tau *t, unsigned eta, int above);
/* The same as a trust: log_eta(1 / keep) in [0, 1], so bd_fid_keep gives the
 * keep back and bd_fid_score / bd_fid_plan use it unchanged; -1 unknown. */
double bd_fid_winner_trust(const bd_fid_tau *t, unsigned eta, int above);

/* The plan for "winners": the bracket as bd_fid_plan chooses it, but the
 * full-fidelity share owed only 1 / (n + 1), n the configs trained in full
 * so far (every config when the chosen bracket is the full-fidelity one).
 * The cuts already keep as much as the winners need, so full training is
 * not a second hedge against the same doubt, only the source of the
 * measurement: 1 / (n + 1) is the chance the next full training ends best
 * of all n + 1 (exchangeable), i.e. changes the winners the cuts are
 * measured by. So the first config trains in full, the check never stops,
 * and its cost falls as the evidence grows: n grows as the square root of
 * the budget (n (n + 1) r_max ~ the budget spent). Until a level is
 * measured its cut is the paper's 1/eta (bd_fid_keep). */
int bd_fid_plan_winners(unsigned eta, int L, int s_min, const double *b, const double *t, double spent_full,
                        double spent_all, size_t n, int *chosen, double *phi);

#endif
