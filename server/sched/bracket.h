/* bracket.h: synchronous successive-halving brackets, the engine shared by
 * successive_halving.c and hyperband.c.
 *
 * A bracket is a plan of rungs i = 0..nrungs-1: rung i runs n[i] configs to
 * the cumulative budget budget[i]; when every trial of rung i has ended, the
 * best n[i+1] configs (rung.h ranking) are promoted into rung i+1. Rung 0
 * takes n[0] new configs (or, for SH's doubling trick, the first bracket's
 * configs again). A bracket set runs a plan of brackets, produced one at a
 * time by a callback, several at once: work is handed out from the earliest
 * open bracket that has some, else from a new bracket, so workers only wait
 * when no open bracket can start a trial and the plan is used up.
 *
 * Rules (docs/SCHEDULERS.md, "Rules common to all three"; the algorithms in
 * docs/ALGORITHMS.md sections 1-3):
 * - A promotion or a retry is a trial of the same config (config_id) with
 *   resume_from = the config's latest completed trial (0 if none).
 * - A config already trained to at least a rung's budget gets no new trial:
 *   its latest loss is carried over ("reused"; SH doubling and budgets capped
 *   at resource.max).
 * - A trial that fails, expires or is stopped is offered again (same config,
 *   budget and resume_from) up to max_retries times; then it counts as loss
 *   +INFINITY. A diverged result (+INFINITY) ranks last.
 *
 * Stopping type (bd_bk_set_stopping; the schedulers' "type": "stopping",
 * as Optuna's HyperbandPruner runs SuccessiveHalvingPruner per bracket):
 * no trial is promoted. Each of a bracket's n[0] configs gets one trial
 * with the bracket's last budget and resume_from 0; a measurement whose
 * step reaches the budget of rung i < nrungs-1 (the highest such rung the
 * config has not passed) is judged at rung i: continue when its loss is in
 * the top floor(m / eta) of the m results rung i has seen, itself
 * included, or when that top is still empty (too few to judge); else
 * stop. A stopped trial is final (never retried); one that fails or
 * expires is offered again as above, from scratch, keeping the rungs its
 * config passed. The bracket ends when all n[0] configs have ended; its
 * winner is the best completion. The decisions are a pure function of the
 * events, live or replayed.
 *
 * Cost: suggest is O(1) plus sampling a config; observe is O(log brackets)
 * plus, once per rung, sorting that rung; memory is O(configs of the
 * brackets not yet ended): an ended bracket keeps only its counts, survivors
 * and winner while describe shows it (the last BD_BK_DESCRIBED), then only
 * a NULL slot in the plan order. */
#ifndef BD_BRACKET_H
#define BD_BRACKET_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "idmap.h"
#include "proposer.h"
#include "sched.h"

#define BD_BK_MAX_RUNGS 64

typedef struct bd_bk_spec {
    int64_t iteration;              /* label >= 1: Hyperband repetition, infinite-horizon k, SH doubling round */
    int s;                          /* label 0..63: Hyperband s, infinite-horizon l, 0 for SH */
    int nrungs;                     /* 1..BD_BK_MAX_RUNGS */
    long long n[BD_BK_MAX_RUNGS];   /* configs per rung; n[i+1] <= n[i], n[0] >= 1 */
    double budget[BD_BK_MAX_RUNGS]; /* cumulative budget per rung, non-decreasing, within the resource */
    int reuse_arms;                 /* rung 0 = the first bracket's configs; such a bracket opens
                                       by itself when the one before it ends */
    double spend_before;            /* planned resource of all earlier brackets (set by plans that cap it) */
} bd_bk_spec;

/* The resource a bracket trains when promotions resume: n[0] budget[0] plus,
 * for each later rung, n[i] (budget[i] - budget[i-1]). */
double bd_bk_spec_spend(const bd_bk_spec *spec);

/* Fills *next with the plan's bracket after prev (prev NULL: the first one).
 * Returns 1, or 0 when the plan has no more brackets. Must be pure. */
typedef int (*bd_bk_plan_fn)(const void *ud, const bd_bk_spec *prev, bd_bk_spec *next);

typedef struct bd_bk_config bd_bk_config;
typedef struct bd_bracket bd_bracket;

typedef struct bd_bkset {
    const bd_study_def *def; /* borrowed */
    int max_retries;
    int with_iteration; /* extra carries "iteration" */
    bd_bk_plan_fn plan;
    const void *plan_ud; /* borrowed */
    bd_bk_spec next;     /* the next bracket to open, when has_next */
    int has_next;
    bd_bracket **brackets; /* owned, opened brackets in plan order */
    size_t n_brackets, cap_brackets;
    size_t *ready; /* min-heap of indices of brackets with work (lazy) */
    size_t n_ready, cap_ready;
    bd_idmap by_label; /* (iteration, s) key -> bd_bracket */
    bd_idmap configs;  /* config_id -> bd_bk_config (owned through the map) */
    bd_idmap trials;   /* trial_id -> its member */
    long long running; /* trials created and not ended */
    long long created; /* CREATED events taken in */
    bd_proposer *proposer; /* owned: where rung 0's new configs come from; learns from every result */
    int reuses_first;      /* the plan's later brackets place the first bracket's configs again (SH doubling) */
    long long members;     /* rung places in brackets not yet released */
    long long survivors;   /* survivors' ids kept for describe */
    size_t config_bytes;   /* the configs' texts, allocated */
    int stopping;          /* the stopping type (bd_bk_set_stopping) */
    unsigned stop_eta;     /*   its cut: the top 1/stop_eta of a rung goes on */
    long long judged_entries; /* results in the stopping rungs of brackets not yet released */
    size_t bracket_bytes;  /* of the opened brackets' own structs */
} bd_bkset;

/* Starts an empty set whose first bracket is plan(ud, NULL). def and ud are
 * borrowed for the set's life; proposer is stolen. */
void bd_bk_init(bd_bkset *set, const bd_study_def *def, int max_retries, int with_iteration, bd_bk_plan_fn plan,
                const void *ud, bd_proposer *proposer);
/* Frees everything the set owns (NULL-safe on an initialized set). */
void bd_bk_free(bd_bkset *set);
/* The next trial (BD_SUGGEST_TRIAL, *out filled with new references) or
 * BD_SUGGEST_WAIT / BD_SUGGEST_DONE. Does not change the set. */
int bd_bk_suggest(const bd_bkset *set, const bd_suggest_ctx *ctx, bd_suggestion *out);
/* What bd_bk_suggest would answer, without proposing (sched.h status). */
bd_sched_status bd_bk_status(const bd_bkset *set);
/* Makes an initialized set, before any event, of the stopping type (above),
 * judging at each rung with eta >= 2. Not with a plan that places the
 * first bracket's configs again (SH's doubling). */
void bd_bk_set_stopping(bd_bkset *set, unsigned eta);
/* Takes in one event; unknown trials and configs are ignored. *out is the
 * answer to a MEASUREMENT (stopping type only; zeroed by the caller). */
void bd_bk_observe(bd_bkset *set, const bd_event *ev, bd_decision *out);
/* How many of the last opened brackets describe shows in detail; older ones
 * that have ended are freed (brackets_total still counts them). */
#define BD_BK_DESCRIBED 64

/* {"running", "created", "brackets_total", "next": {...}|null, "brackets": [...],
 *  "held": {"configs", "trials"} (kept in memory), "model"}
 * with the last BD_BK_DESCRIBED opened brackets in detail. New reference. */
json_t *bd_bk_describe(const bd_bkset *set);
/* The set's heap, on the safe side (sched.h held_bytes), in O(1). */
size_t bd_bk_held_bytes(const bd_bkset *set);
/* A bracket spec as JSON {"iteration", "bracket", "n": [...], "budget": [...]}. New reference. */
json_t *bd_bk_spec_json(const bd_bk_spec *spec);

#endif
