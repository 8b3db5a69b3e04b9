/* fidelity.c: the measured trust of a study's low fidelities and the
 * bracket, cut and share decisions it drives (fidelity.h). Prior art read
 * for it: Hyperband's bracket hedge (Li et al., JMLR 2018), whose brackets
 * this chooses among instead of cycling; BOHB and DyHPO (Wistuba et al.,
 * NeurIPS 2022), which decide per config how far to train from a model of
 * the curves; PriorBand (Mallik et al., NeurIPS 2023) and the learned
 * bracket weights of Hyperband variants, which move budget to the brackets
 * that paid; and FastBO-style rules (Jiang and Mian, 2024), which pick the
 * fidelity whose rank correlation with the final loss is high enough. This
 * file takes the rank correlation as the measure, but measures it on the
 * configs trained in full (unselected), and turns its lower bound into
 * the cut sizes, the bracket and the full-fidelity share with no threshold. */
#include "fidelity.h"

#include <math.h>
#include <stdlib.h>

#include "../common.h"

void bd_fid_tau_free(bd_fid_tau *t)
{
    free(t->x);
    free(t->y);
    *t = (bd_fid_tau){0};
}

static int sign_of(double a, double b) /* sign(a - b), NaN as +INFINITY, equal infinities tie */
{
    if (isnan(a))
        a = INFINITY;
    if (isnan(b))
        b = INFINITY;
    return a < b ? -1 : a > b ? 1 : 0;
}

void bd_fid_tau_add(bd_fid_tau *t, double x, double y)
{
    for (size_t i = 0; i < t->n; i++) {
        int sx = sign_of(x, t->x[i]), sy = sign_of(y, t->y[i]);
        t->s += sx * sy;
        t->ties_x += sx == 0;
        t->ties_y += sy == 0;
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->x = bd_xrealloc(t->x, t->cap * sizeof *t->x);
        t->y = bd_xrealloc(t->y, t->cap * sizeof *t->y);
    }
    t->x[t->n] = x;
    t->y[t->n++] = y;
}

double bd_fid_tau_value(const bd_fid_tau *t)
{
    if (t->n < 2)
        return NAN;
    double n0 = (double)t->n * (double)(t->n - 1) / 2;
    double d = (n0 - t->ties_x) * (n0 - t->ties_y);
    return d > 0 ? t->s / sqrt(d) : NAN;
}

double bd_fid_tau_se(size_t n)
{
    if (n < 2)
        return NAN;
    double m = (double)n;
    return sqrt(2 * (2 * m + 5) / (9 * m * (m - 1)));
}

double bd_fid_trust(double tau, double se, size_t n)
{
    if (n < BD_FID_MIN_PAIRS || isnan(tau) || isnan(se))
        return -1;
    double lo = tau - se;
    return lo > 0 ? sin(M_PI / 2 * fmin(lo, 1)) : 0;
}

double bd_fid_keep(unsigned eta, double t)
{
    return t < 0 ? 1.0 / eta : pow((double)eta, -fmin(t, 1));
}

double bd_fid_score(unsigned eta, int L, const double *b, const double *t, int s)
{
    if (s >= L)
        return 1 / b[L];
    double p = 1, cost = 0, screen = 1, prev = 0;
    for (int j = s; j <= L; j++) {
        cost += p * (b[j] - prev);
        prev = b[j];
        if (j < L) {
            double tj = t[j] < 0 ? 1 : t[j];
            p *= bd_fid_keep(eta, tj);
            screen *= tj;
        }
    }
    double n = 1 / p, n_eff = 1 + (n - 1) * screen;
    return n_eff / (n * cost);
}

int bd_fid_plan(unsigned eta, int L, int s_min, const double *b, const double *t, double spent_full,
                double spent_all, int *chosen, double *phi)
{
    int best = L;
    double best_score = bd_fid_score(eta, L, b, t, L);
    for (int s = L - 1; s >= s_min; s--) { /* ties to the higher s: strictly better only */
        double e = bd_fid_score(eta, L, b, t, s);
        if (e > best_score * (1 + 1e-12)) {
            best = s;
            best_score = e;
        }
    }
    *chosen = best;
    *phi = best == L ? 1 : t[best] < 0 ? 0.5 : 1 - t[best];
    if (best == L || spent_full < *phi * spent_all)
        return L;
    return best;
}

/* "fidelity": "winners" (fidelity.h): where the configs that end best
 * stood at a level, the question a cut asks, rather than how the whole
 * population reorders (which a mass of poor configs dominates). */

/* 1 + the configs ranked ahead of config w at level x (ties counted ahead:
 * the cut may drop w among its equals), NaN as +INFINITY. */
static size_t rank_at(const bd_fid_tau *t, size_t w)
{
    size_t r = 1;
    for (size_t k = 0; k < t->n; k++)
        if (k != w && sign_of(t->x[k], t->x[w]) <= 0)
            r++;
    return r;
}

double bd_fid_winner_keep(const bd_fid_tau *t, unsigned eta, int above)
{
    if (t->n < BD_FID_MIN_PAIRS)
        return NAN;
    size_t m = (size_t)floor((double)t->n * pow((double)eta, -(double)above) + 1e-9);
    if (m < 1)
        m = 1;
    /* the m configs of lowest final loss, in order of arrival among equals
     * (a pure function of the pairs' order, so a replay picks the same) */
    size_t worst = 0;
    char *taken = bd_xcalloc(t->n, 1);
    for (size_t j = 0; j < m; j++) {
        size_t w = t->n;
        for (size_t k = 0; k < t->n; k++)
            if (!taken[k] && (w == t->n || sign_of(t->y[k], t->y[w]) < 0))
                w = k;
        taken[w] = 1;
        size_t r = rank_at(t, w);
        if (r > worst)
            worst = r;
    }
    free(taken);
    double q = (double)worst / (double)(t->n + 1);
    return fmin(1, fmax(q, 1.0 / eta));
}

double bd_fid_winner_trust(const bd_fid_tau *t, unsigned eta, int above)
{
    double q = bd_fid_winner_keep(t, eta, above);
    if (isnan(q))
        return -1;
    double tr = -log(q) / log((double)eta);
    return fmin(1, fmax(0, tr));
}

int bd_fid_plan_winners(unsigned eta, int L, int s_min, const double *b, const double *t, double spent_full,
                        double spent_all, size_t n, int *chosen, double *phi)
{
    (void)bd_fid_plan(eta, L, s_min, b, t, spent_full, spent_all, chosen, phi);
    if (*chosen < L)
        *phi = 1 / ((double)n + 1);
    return *chosen == L || spent_full < *phi * spent_all ? L : *chosen;
}
