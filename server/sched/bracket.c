/* bracket.c: synchronous successive-halving brackets (see bracket.h).
 *
 * Invariants, restored at the end of every observe:
 * - a member is WAITING (needs a trial), RUNNING (its trial runs) or DONE;
 *   a config has at most one WAITING member (cfg->pending);
 * - only a bracket's active rung has WAITING or RUNNING members; rungs before
 *   it are complete and ranked, rungs after it are empty;
 * - in every bracket the retry queue head and the active rung's cursor point
 *   at WAITING members (settle()), so "has work" is O(1);
 * - the root of the ready heap is a bracket with work (settle_ready()).
 *
 * Memory follows the brackets still running, not the study's history: a
 * bracket that has ended keeps its counts, its survivors' ids and its winner
 * and frees its members, and once describe no longer shows it, it is freed
 * whole; a config is freed with the last member that names it; a trial
 * leaves the trials map when it ends. (The doubling trick's first bracket
 * stays whole: every later round places its configs again.) */
#include "bracket.h"

#include "../json_util.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rung.h"

enum { MB_WAITING = 0, MB_RUNNING, MB_DONE };

struct bd_bk_config {
    int64_t id;
    char *config;              /* compact JSON text (owned; json_util.h): ~48 bytes where jansson's nodes take ~500 */
    int64_t last_trial;        /* latest completed trial: the resume point (0 = none) */
    double trained;            /* budget of last_trial */
    double last_loss;          /* loss of last_trial */
    struct bk_member *pending; /* the member waiting for a trial of this config */
    long long members;         /* members naming it, in brackets not yet released */
};

typedef struct bk_member {
    bd_bk_config *cfg;
    bd_bracket *bracket;
    int rung;
    unsigned char state;  /* MB_* */
    unsigned char queued; /* in the bracket's retry queue */
    unsigned char reused; /* result carried over without a trial */
    int retries;          /* attempts given again so far */
    int passed;           /* stopping: rungs judged so far (the highest judged is passed - 1) */
    int64_t trial;        /* current (or last) trial, 0 = none */
    int64_t resume_from;  /* for every attempt of this member */
    double loss;          /* when DONE */
} bk_member;

typedef struct bk_rung {
    bk_member **m; /* owned members (each owned), in placement order */
    long long count, cap;
    long long finished; /* DONE members */
    long long created;  /* trials created, retries included */
    long long running;  /* trials running now */
    long long failed;   /* attempts that failed, expired (or, promotion type, were stopped) */
    long long stopped;  /* stopping: trials stopped at this rung */
    long long judged;   /* stopping: results this rung judged (completions, at the last rung) */
    long long went_on;  /* stopping: of those, trials answered continue */
    long long reused;
    long long next;     /* cursor: members before it were handed out at least once */
    int64_t *survivors; /* owned, once the rung is complete: the ids of the configs promoted, best first */
    long long n_survivors;
} bk_rung;

struct bd_bracket {
    bd_bkset *set; /* the set it belongs to (for its memory counters) */
    bd_bk_spec spec;
    size_t index;         /* position in plan order */
    int active;           /* the rung being run */
    long long fresh_left; /* rung-0 places still waiting for a new config */
    bk_member **rq;       /* retry queue (FIFO ring) */
    size_t rq_head, rq_n, rq_cap;
    int done;
    int released; /* done, and its members freed (only counts, survivors and the winner remain) */
    int in_ready;
    int64_t winner_id; /* when done: the best config of the last rung (0 if it had none) */
    double winner_loss;
    bd_rung *judge;  /* stopping: one asynchronous rung (rung.h) per rung, freed on release; else NULL */
    bk_rung rungs[]; /* spec.nrungs of them */
};

static const double BUDGET_TOL = 1e-9;

static int64_t label_key(int64_t iteration, int s)
{
    return iteration * 256 + s + 1;
}

/* ------------------------------------------------------------- plumbing */

static bk_member *rung_add(bk_rung *r, bd_bracket *b, int rung, bd_bk_config *cfg)
{
    if (r->count == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 8;
        r->m = bd_xrealloc(r->m, (size_t)r->cap * sizeof *r->m);
    }
    bk_member *m = bd_xcalloc(1, sizeof *m);
    m->cfg = cfg;
    cfg->members++;
    b->set->members++;
    m->bracket = b;
    m->rung = rung;
    m->state = MB_WAITING;
    r->m[r->count++] = m;
    return m;
}

static void rq_push(bd_bracket *b, bk_member *m)
{
    if (m->queued)
        return;
    if (b->rq_n == b->rq_cap) {
        size_t cap = b->rq_cap ? 2 * b->rq_cap : 8;
        bk_member **q = bd_xmalloc(cap * sizeof *q);
        for (size_t i = 0; i < b->rq_n; i++)
            q[i] = b->rq[(b->rq_head + i) % b->rq_cap];
        free(b->rq);
        b->rq = q;
        b->rq_cap = cap;
        b->rq_head = 0;
    }
    b->rq[(b->rq_head + b->rq_n) % b->rq_cap] = m;
    b->rq_n++;
    m->queued = 1;
}

/* Drops handed-out members from the retry queue head and the cursor. */
static void settle(bd_bracket *b)
{
    if (b->released)
        return;
    while (b->rq_n && b->rq[b->rq_head]->state != MB_WAITING) {
        b->rq[b->rq_head]->queued = 0;
        b->rq_head = (b->rq_head + 1) % b->rq_cap;
        b->rq_n--;
    }
    bk_rung *r = &b->rungs[b->active];
    while (r->next < r->count && r->m[r->next]->state != MB_WAITING)
        r->next++;
}

static int has_work(const bd_bracket *b)
{
    if (b->done)
        return 0;
    const bk_rung *r = &b->rungs[b->active];
    return (b->rq_n || r->next < r->count || b->fresh_left > 0);
}

static void ready_push(bd_bkset *set, size_t idx)
{
    if (set->n_ready == set->cap_ready) {
        set->cap_ready = set->cap_ready ? 2 * set->cap_ready : 16;
        set->ready = bd_xrealloc(set->ready, set->cap_ready * sizeof *set->ready);
    }
    size_t i = set->n_ready++;
    while (i > 0 && set->ready[(i - 1) / 2] > idx) {
        set->ready[i] = set->ready[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    set->ready[i] = idx;
}

static void ready_pop(bd_bkset *set)
{
    size_t last = set->ready[--set->n_ready], i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= set->n_ready)
            break;
        if (c + 1 < set->n_ready && set->ready[c + 1] < set->ready[c])
            c++;
        if (set->ready[c] >= last)
            break;
        set->ready[i] = set->ready[c];
        i = c;
    }
    if (set->n_ready)
        set->ready[i] = last;
}

static void mark_ready(bd_bkset *set, bd_bracket *b)
{
    settle(b);
    if (has_work(b) && !b->in_ready) {
        b->in_ready = 1;
        ready_push(set, b->index);
    }
}

static void settle_ready(bd_bkset *set)
{
    while (set->n_ready) {
        bd_bracket *b = set->brackets[set->ready[0]];
        if (b) { /* NULL: ended and forgotten while it waited in the heap */
            settle(b);
            if (has_work(b))
                break;
            b->in_ready = 0;
        }
        ready_pop(set);
    }
}

/* ------------------------------------------------------ rung transitions */

static int cmp_rank(const void *pa, const void *pb)
{
    const bk_member *a = *(bk_member *const *)pa, *b = *(bk_member *const *)pb;
    if (bd_rank_before(a->loss, a->cfg->id, b->loss, b->cfg->id))
        return -1;
    return bd_rank_before(b->loss, b->cfg->id, a->loss, a->cfg->id);
}

/* Places cfg in rung i of b: carried over when already trained that far,
 * else waiting for a trial that resumes from its latest checkpoint. */
static void place(bd_bracket *b, int i, bd_bk_config *cfg)
{
    bk_rung *r = &b->rungs[i];
    bk_member *m = rung_add(r, b, i, cfg);
    double target = b->spec.budget[i];
    if (cfg->last_trial && cfg->trained + BUDGET_TOL * fmax(1.0, target) >= target) {
        m->state = MB_DONE;
        m->reused = 1;
        m->loss = cfg->last_loss;
        r->finished++;
        r->reused++;
        return;
    }
    m->resume_from = cfg->last_trial;
    cfg->pending = m;
}

/* Ranks every complete rung from the active one on and promotes its best
 * n[i+1] configs; stops at a rung still waiting for results. */
static void advance(bd_bracket *b)
{
    if (b->set->stopping) {
        /* one rung of members, each trained towards the last budget: the
         * bracket ends with its last member, its winner the best completion */
        const bd_rung *last = &b->judge[b->spec.nrungs - 1];
        if (b->done || b->rungs[0].finished < b->spec.n[0])
            return;
        b->done = 1;
        if (last->best) {
            b->winner_id = last->best->config_id;
            b->winner_loss = last->best->loss;
        }
        return;
    }
    while (!b->done) {
        int i = b->active;
        bk_rung *r = &b->rungs[i];
        if (r->finished < b->spec.n[i])
            return;
        bk_member **ranked = bd_xmalloc((size_t)r->count * sizeof *ranked);
        memcpy(ranked, r->m, (size_t)r->count * sizeof *ranked);
        qsort(ranked, (size_t)r->count, sizeof *ranked, cmp_rank);
        if (i + 1 == b->spec.nrungs) {
            b->done = 1;
            if (r->count) {
                b->winner_id = ranked[0]->cfg->id;
                b->winner_loss = ranked[0]->loss;
            }
            free(ranked);
            return;
        }
        b->active = i + 1;
        long long keep = b->spec.n[i + 1] < r->count ? b->spec.n[i + 1] : r->count;
        r->survivors = bd_xmalloc((size_t)(keep ? keep : 1) * sizeof *r->survivors);
        r->n_survivors = keep;
        b->set->survivors += keep;
        for (long long j = 0; j < keep; j++) {
            r->survivors[j] = ranked[j]->cfg->id;
            place(b, i + 1, ranked[j]->cfg);
        }
        free(ranked);
        if (keep < b->spec.n[i + 1])
            b->spec.n[i + 1] = keep; /* cannot happen with a well-formed plan */
    }
}

static size_t bracket_bytes(int nrungs)
{
    return sizeof(bd_bracket) + (size_t)nrungs * sizeof(bk_rung);
}

/* Frees a released bracket describe no longer shows: only its slot in the
 * plan order stays (NULL). A late event naming its label matches no
 * bracket and is ignored, as one naming a bracket never planned. */
static void forget_if_old(bd_bkset *set, bd_bracket *b)
{
    if (!b || !b->released || b->index + BD_BK_DESCRIBED >= set->n_brackets)
        return;
    for (int k = 0; k < b->spec.nrungs; k++) {
        set->survivors -= b->rungs[k].survivors ? b->rungs[k].n_survivors : 0;
        free(b->rungs[k].survivors);
    }
    bd_idmap_remove(&set->by_label, label_key(b->spec.iteration, b->spec.s));
    set->bracket_bytes -= bracket_bytes(b->spec.nrungs);
    set->brackets[b->index] = NULL;
    free(b);
}

static bd_bracket *open_bracket(bd_bkset *set, const bd_bk_spec *spec)
{
    bd_bracket *b = bd_xcalloc(1, bracket_bytes(spec->nrungs));
    set->bracket_bytes += bracket_bytes(spec->nrungs);
    b->set = set;
    b->spec = *spec;
    b->index = set->n_brackets;
    if (set->n_brackets == set->cap_brackets) {
        set->cap_brackets = set->cap_brackets ? 2 * set->cap_brackets : 16;
        set->brackets = bd_xrealloc(set->brackets, set->cap_brackets * sizeof *set->brackets);
    }
    set->brackets[set->n_brackets++] = b;
    if (set->stopping) {
        b->judge = bd_xcalloc((size_t)spec->nrungs, sizeof *b->judge);
        set->bracket_bytes += (size_t)spec->nrungs * sizeof *b->judge;
        for (int k = 0; k < spec->nrungs; k++)
            bd_rung_init(&b->judge[k], set->stop_eta);
    }
    if (set->n_brackets > BD_BK_DESCRIBED)
        forget_if_old(set, set->brackets[set->n_brackets - 1 - BD_BK_DESCRIBED]);
    bd_idmap_put(&set->by_label, label_key(spec->iteration, spec->s), b);
    bd_bk_spec after;
    set->has_next = set->plan(set->plan_ud, spec, &after);
    if (set->has_next)
        set->next = after;
    if (spec->reuse_arms && set->n_brackets > 1) {
        const bk_rung *first = &set->brackets[0]->rungs[0];
        for (long long j = 0; j < first->count; j++)
            place(b, 0, first->m[j]->cfg);
        b->spec.n[0] = first->count;
        advance(b);
    } else {
        b->fresh_left = spec->n[0];
    }
    mark_ready(set, b);
    return b;
}

static void config_free(bd_bkset *set, bd_bk_config *cfg)
{
    bd_idmap_remove(&set->configs, cfg->id);
    set->config_bytes -= strlen(cfg->config) + 1;
    free(cfg->config);
    free(cfg);
}

/* Frees an ended bracket's members, and each config no other bracket names.
 * Its trials have all ended, so none is in the trials map any more. */
static void release(bd_bkset *set, bd_bracket *b)
{
    if (!b->done || b->released || (b->index == 0 && set->reuses_first))
        return;
    for (int k = 0; k < b->spec.nrungs; k++) {
        bk_rung *r = &b->rungs[k];
        for (long long j = 0; j < r->count; j++) {
            bd_bk_config *cfg = r->m[j]->cfg;
            if (--cfg->members == 0)
                config_free(set, cfg);
            free(r->m[j]);
        }
        set->members -= r->count;
        free(r->m);
        r->m = NULL;
        r->next = r->count;
    }
    free(b->rq);
    b->rq = NULL;
    b->rq_head = b->rq_n = b->rq_cap = 0;
    if (b->judge) {
        for (int k = 0; k < b->spec.nrungs; k++) {
            set->judged_entries -= (long long)b->judge[k].count;
            bd_rung_free(&b->judge[k]);
        }
        free(b->judge);
        b->judge = NULL;
        set->bracket_bytes -= (size_t)b->spec.nrungs * sizeof *b->judge;
    }
    b->released = 1;
    forget_if_old(set, b); /* a straggler's bracket can end after it left describe's window */
}

/* After b ended: open the doubling trick's next rounds, which need no trial
 * to start (each may end at once when every config is already trained). */
static void open_followers(bd_bkset *set, bd_bracket *b)
{
    while (b->done && set->has_next && set->next.reuse_arms) {
        bd_bk_spec spec = set->next;
        bd_bracket *ended = b;
        b = open_bracket(set, &spec);
        release(set, ended);
    }
    release(set, b);
}

static void member_done(bd_bkset *set, bk_member *m, double loss)
{
    bd_bracket *b = m->bracket;
    m->state = MB_DONE;
    m->loss = isnan(loss) ? INFINITY : loss;
    b->rungs[m->rung].finished++;
    advance(b);
    mark_ready(set, b);
    open_followers(set, b);
}

/* -------------------------------------------------------------- the API */

void bd_bk_init(bd_bkset *set, const bd_study_def *def, int max_retries, int with_iteration, bd_bk_plan_fn plan,
                const void *ud, bd_proposer *proposer)
{
    memset(set, 0, sizeof *set);
    set->proposer = proposer;
    set->def = def;
    set->max_retries = max_retries;
    set->with_iteration = with_iteration;
    set->plan = plan;
    set->plan_ud = ud;
    set->has_next = plan(ud, NULL, &set->next);
    bd_bk_spec second;
    set->reuses_first = set->has_next && plan(ud, &set->next, &second) && second.reuse_arms;
}

void bd_bk_free(bd_bkset *set)
{
    for (size_t i = 0; i < set->n_brackets; i++) {
        bd_bracket *b = set->brackets[i];
        if (!b)
            continue; /* forgotten */
        for (int k = 0; k < b->spec.nrungs; k++) {
            for (long long j = 0; !b->released && j < b->rungs[k].count; j++)
                free(b->rungs[k].m[j]);
            free(b->rungs[k].m);
            free(b->rungs[k].survivors);
        }
        free(b->rq);
        for (int k = 0; b->judge && k < b->spec.nrungs; k++)
            bd_rung_free(&b->judge[k]);
        free(b->judge);
        free(b);
    }
    free(set->brackets);
    free(set->ready);
    bd_proposer_free(set->proposer);
    for (size_t i = 0; i < set->configs.cap; i++) {
        bd_bk_config *c = set->configs.slots[i].value;
        if (set->configs.slots[i].key && c) {
            free(c->config);
            free(c);
        }
    }
    bd_idmap_clear(&set->configs);
    bd_idmap_clear(&set->trials);
    bd_idmap_clear(&set->by_label);
    memset(set, 0, sizeof *set);
}

static json_t *extra_json(const bd_bkset *set, int64_t iteration, int s, int rung)
{
    json_t *x = json_pack("{s:i, s:i}", "bracket", s, "rung", rung);
    if (set->with_iteration)
        json_object_set_new(x, "iteration", json_integer(iteration));
    return x;
}

int bd_bk_suggest(const bd_bkset *set, const bd_suggest_ctx *ctx, bd_suggestion *out)
{
    if (set->n_ready) {
        const bd_bracket *b = set->brackets[set->ready[0]];
        const bk_rung *r = &b->rungs[b->active];
        const bk_member *m = NULL;
        if (b->rq_n)
            m = b->rq[b->rq_head];
        else if (r->next < r->count)
            m = r->m[r->next];
        if (m) {
            out->config = bd_json_from_text(m->cfg->config);
            out->config_id = m->cfg->id;
            out->budget = b->spec.budget[set->stopping ? b->spec.nrungs - 1 : m->rung];
            out->resume_from = m->resume_from;
            out->extra = extra_json(set, b->spec.iteration, b->spec.s, m->rung);
            return BD_SUGGEST_TRIAL;
        }
        assert(b->fresh_left > 0 && b->active == 0);
        bd_rng rng = ctx->rng;
        out->config = bd_proposer_propose(set->proposer, &rng);
        out->budget = b->spec.budget[set->stopping ? b->spec.nrungs - 1 : 0];
        out->extra = extra_json(set, b->spec.iteration, b->spec.s, 0);
        return BD_SUGGEST_TRIAL;
    }
    if (set->has_next && !set->next.reuse_arms) {
        bd_rng rng = ctx->rng;
        out->config = bd_proposer_propose(set->proposer, &rng);
        out->budget = set->next.budget[set->stopping ? set->next.nrungs - 1 : 0];
        out->extra = extra_json(set, set->next.iteration, set->next.s, 0);
        return BD_SUGGEST_TRIAL;
    }
    return set->running ? BD_SUGGEST_WAIT : BD_SUGGEST_DONE;
}

bd_sched_status bd_bk_status(const bd_bkset *set)
{
    /* Mirrors bd_bk_suggest: a ready bracket always has a member or a fresh slot. */
    if (set->n_ready || (set->has_next && !set->next.reuse_arms))
        return BD_STATUS_RUNNING;
    return set->running ? BD_STATUS_WAITING : BD_STATUS_DONE;
}

/* The member a CREATED event starts, or NULL if it matches nothing planned. */
static bk_member *member_for_created(bd_bkset *set, const bd_event *ev)
{
    int64_t config_id = ev->config_id ? ev->config_id : ev->trial_id;
    if (config_id != ev->trial_id) {
        bd_bk_config *cfg = bd_idmap_get(&set->configs, config_id);
        bk_member *m = cfg ? cfg->pending : NULL;
        if (m)
            cfg->pending = NULL;
        return m;
    }
    if (!ev->config || bd_idmap_get(&set->configs, config_id))
        return NULL;
    int64_t iteration = bd_json_int(ev->extra, "iteration", 1);
    long long s = bd_json_int(ev->extra, "bracket", -1);
    if (bd_json_int(ev->extra, "rung", 0) != 0 || s < 0 || s >= BD_BK_MAX_RUNGS)
        return NULL;
    bd_bracket *b = bd_idmap_get(&set->by_label, label_key(iteration, (int)s));
    if (!b && set->has_next && !set->next.reuse_arms && set->next.iteration == iteration && set->next.s == s) {
        bd_bk_spec spec = set->next;
        b = open_bracket(set, &spec);
    }
    if (!b || b->fresh_left <= 0)
        return NULL;
    bd_bk_config *cfg = bd_xcalloc(1, sizeof *cfg);
    cfg->id = config_id;
    cfg->config = bd_json_text(ev->config);
    set->config_bytes += strlen(cfg->config) + 1;
    bd_idmap_put(&set->configs, config_id, cfg);
    b->fresh_left--;
    return rung_add(&b->rungs[0], b, 0, cfg);
}

static void on_created(bd_bkset *set, const bd_event *ev)
{
    bk_member *m = member_for_created(set, ev);
    if (!m)
        return;
    m->state = MB_RUNNING;
    m->trial = ev->trial_id;
    bd_idmap_put(&set->trials, ev->trial_id, m);
    m->bracket->rungs[m->rung].created++;
    m->bracket->rungs[m->rung].running++;
    set->running++;
    settle(m->bracket);
}

static bk_member *running_member(bd_bkset *set, int64_t trial_id)
{
    bk_member *m = bd_idmap_get(&set->trials, trial_id);
    if (!m || m->state != MB_RUNNING || m->trial != trial_id)
        return NULL;
    bd_idmap_remove(&set->trials, trial_id);
    m->bracket->rungs[m->rung].running--;
    set->running--;
    return m;
}

static void on_completed(bd_bkset *set, const bd_event *ev)
{
    bk_member *m = running_member(set, ev->trial_id);
    if (!m)
        return;
    bd_bk_config *cfg = m->cfg;
    /* a trial resumes from the config's latest result (bd_bk_suggest), so it trained the difference */
    double units = ev->budget - (m->resume_from ? cfg->trained : 0);
    bd_proposer_add_text(set->proposer, cfg->id, cfg->config, ev->budget, ev->loss, ev->elapsed_seconds, units);
    cfg->last_trial = ev->trial_id;
    cfg->trained = ev->budget;
    cfg->last_loss = isnan(ev->loss) ? INFINITY : ev->loss;
    if (set->stopping) { /* the last rung's result, for the winner */
        bd_bracket *b = m->bracket;
        bd_rung_add(&b->judge[b->spec.nrungs - 1], cfg->id, ev->trial_id, ev->loss);
        b->rungs[b->spec.nrungs - 1].judged++;
        set->judged_entries++;
    }
    member_done(set, m, ev->loss);
}

static void on_ended(bd_bkset *set, const bd_event *ev)
{
    bk_member *m = running_member(set, ev->trial_id);
    if (!m)
        return;
    if (set->stopping && ev->type == BD_EV_STOPPED) {
        /* a stop answer (judge): final, never retried; it ranks by its last judged result */
        m->bracket->rungs[m->passed ? m->passed - 1 : 0].stopped++;
        member_done(set, m, m->passed ? m->loss : INFINITY);
        return;
    }
    m->bracket->rungs[m->rung].failed++;
    if (m->retries < set->max_retries) {
        m->retries++;
        m->state = MB_WAITING;
        m->cfg->pending = m;
        rq_push(m->bracket, m);
        mark_ready(set, m->bracket);
        return;
    }
    member_done(set, m, INFINITY);
}

/* stopping: a measurement of a running trial whose step reaches the budget
 * of rung i (the highest below the last that its member has not passed)
 * enters rung i's asynchronous rung (rung.h): continue when it is in the
 * top floor(n / eta) of the n results there or when that top is still
 * empty (too few to judge), else *out says stop. A retried member keeps
 * the rungs it passed. */
static void judge(bd_bkset *set, const bd_event *ev, bd_decision *out)
{
    bk_member *m = bd_idmap_get(&set->trials, ev->trial_id);
    if (!m || m->state != MB_RUNNING || m->trial != ev->trial_id)
        return;
    bd_bracket *b = m->bracket;
    int i = b->spec.nrungs - 2;
    while (i >= m->passed && ev->step + BUDGET_TOL * fmax(1.0, b->spec.budget[i]) < b->spec.budget[i])
        i--;
    if (i < m->passed)
        return;
    m->passed = i + 1;
    m->loss = isnan(ev->loss) ? INFINITY : ev->loss;
    bd_rung *r = &b->judge[i];
    bd_rung_entry *e = bd_rung_add(r, m->cfg->id, ev->trial_id, ev->loss);
    set->judged_entries++;
    b->rungs[i].judged++;
    /* trained from scratch: the seconds and the budget are both cumulative */
    bd_proposer_add_text(set->proposer, m->cfg->id, m->cfg->config, b->spec.budget[i], ev->loss, ev->elapsed_seconds,
                         b->spec.budget[i]);
    if (e->in_top || !r->top.n) {
        bd_rung_promote(r, e);
        b->rungs[i].went_on++;
        return;
    }
    out->stop = 1;
    snprintf(out->reason, sizeof out->reason, "not in the top %zu of the %zu results at %s %g (bracket %d, rung %d)",
             r->top.n, r->count, set->def->resource_name ? set->def->resource_name : "budget", b->spec.budget[i],
             b->spec.s, i);
}

void bd_bk_set_stopping(bd_bkset *set, unsigned eta)
{
    assert(eta >= 2 && !set->n_brackets && !set->reuses_first);
    set->stopping = 1;
    set->stop_eta = eta;
}

void bd_bk_observe(bd_bkset *set, const bd_event *ev, bd_decision *out)
{
    switch (ev->type) {
    case BD_EV_CREATED:
        set->created++;
        on_created(set, ev);
        break;
    case BD_EV_COMPLETED:
        on_completed(set, ev);
        break;
    case BD_EV_FAILED:
    case BD_EV_EXPIRED:
    case BD_EV_STOPPED:
        on_ended(set, ev);
        break;
    case BD_EV_PRIOR:
        /* A warm-start result teaches the proposer (with "sampler": "tpe")
         * where good configs are; it joins no bracket, so rungs rank only
         * the bracket's own trials. */
        bd_proposer_add(set->proposer, ev->trial_id, ev->config, ev->budget, ev->loss, NAN, ev->budget);
        break;
    case BD_EV_MEASUREMENT:
        if (set->stopping)
            judge(set, ev, out);
        break;
    }
    settle_ready(set);
}

/* ----------------------------------------------------------------- memory */

size_t bd_bk_held_bytes(const bd_bkset *set)
{
    size_t bytes = (size_t)set->configs.count * (BD_HEAP_BLOCK(sizeof(bd_bk_config)) + BD_HEAP_BLOCK(0)) +
                   set->config_bytes +
                   (size_t)set->members * (BD_HEAP_BLOCK(sizeof(bk_member)) + 2 * sizeof(bk_member *)) +
                   (size_t)set->survivors * sizeof(int64_t) + set->bracket_bytes +
                   (size_t)set->judged_entries * (BD_HEAP_BLOCK(sizeof(bd_rung_entry)) + 8 * sizeof(void *)) +
                   set->cap_brackets * sizeof *set->brackets + set->cap_ready * sizeof *set->ready +
                   (set->configs.cap + set->trials.cap + set->by_label.cap) * sizeof(bd_idmap_slot);
    bytes += bd_proposer_held_bytes(set->proposer); /* a learning sampler keeps every result */
    /* and a third more for what is not counted block by block (arrays'
     * headers, the retry queues, glibc's rounding): test_hyperband checks
     * the sum against the heap's real growth */
    return bytes + bytes / 3 + 8192;
}

/* ------------------------------------------------------------- describe */

double bd_bk_spec_spend(const bd_bk_spec *spec)
{
    double spend = 0, before = 0;
    for (int i = 0; i < spec->nrungs; i++) {
        spend += (double)spec->n[i] * (spec->budget[i] - before);
        before = spec->budget[i];
    }
    return spend;
}

json_t *bd_bk_spec_json(const bd_bk_spec *spec)
{
    json_t *n = json_array(), *budget = json_array();
    for (int i = 0; i < spec->nrungs; i++) {
        json_array_append_new(n, json_integer(spec->n[i]));
        json_array_append_new(budget, json_real(spec->budget[i]));
    }
    return json_pack("{s:I, s:i, s:o, s:o}", "iteration", (json_int_t)spec->iteration, "bracket", spec->s, "n", n,
                     "budget", budget);
}

static json_t *bracket_json(const bd_bracket *b)
{
    json_t *rungs = json_array();
    for (int i = 0; i < b->spec.nrungs; i++) {
        const bk_rung *r = &b->rungs[i];
        json_t *rj =
            json_pack("{s:i, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I}", "rung", i, "n", (json_int_t)b->spec.n[i],
                      "budget", b->spec.budget[i], "placed", (json_int_t)r->count, "created", (json_int_t)r->created,
                      "running", (json_int_t)r->running, "finished", (json_int_t)r->finished, "failed",
                      (json_int_t)r->failed, "reused", (json_int_t)r->reused);
        if (b->set->stopping) { /* what the judgements at this rung's budget answered */
            json_object_set_new(rj, "judged", json_integer(r->judged));
            json_object_set_new(rj, "continued", json_integer(r->went_on));
            json_object_set_new(rj, "stopped", json_integer(r->stopped));
        }
        if (r->survivors) {
            json_t *surv = json_array();
            for (long long j = 0; j < r->n_survivors; j++)
                json_array_append_new(surv, json_integer(r->survivors[j]));
            json_object_set_new(rj, "survivors", surv);
        }
        json_array_append_new(rungs, rj);
    }
    json_t *winner = json_null();
    if (b->done && b->winner_id)
        winner = json_pack("{s:I, s:o, s:f}", "config_id", (json_int_t)b->winner_id, "loss",
                           isfinite(b->winner_loss) ? json_real(b->winner_loss) : json_null(), "budget",
                           b->spec.budget[b->spec.nrungs - 1]);
    return json_pack("{s:I, s:i, s:s, s:i, s:o, s:o}", "iteration", (json_int_t)b->spec.iteration, "bracket", b->spec.s,
                     "state", b->done ? "done" : "running", "active_rung", b->active, "rungs", rungs, "winner", winner);
}

json_t *bd_bk_describe(const bd_bkset *set)
{
    json_t *list = json_array();
    size_t from = set->n_brackets > BD_BK_DESCRIBED ? set->n_brackets - BD_BK_DESCRIBED : 0;
    for (size_t i = from; i < set->n_brackets; i++)
        json_array_append_new(list, bracket_json(set->brackets[i]));
    json_t *next = set->has_next ? bd_bk_spec_json(&set->next) : json_null();
    /* "held": what the scheduler keeps in memory, for operators of long studies */
    json_t *held = json_pack("{s:I, s:I}", "configs", (json_int_t)set->configs.count, "trials",
                             (json_int_t)set->trials.count);
    return json_pack("{s:I, s:I, s:I, s:o, s:o, s:o, s:o, s:s}", "running", (json_int_t)set->running, "created",
                     (json_int_t)set->created, "brackets_total", (json_int_t)set->n_brackets, "next", next, "brackets",
                     list, "held", held, "model", bd_proposer_describe(set->proposer), "type",
                     set->stopping ? "stopping" : "promotion");
}
