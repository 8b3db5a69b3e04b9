/* space.c: search spaces (see space.h): parsing with field-precise errors,
 * config validation, sampling, the unit-hypercube encoding and Rising
 * Bandits' per-algorithm sub-spaces.
 *
 * Invariants beyond space.h:
 * - names are 1..NAME_MAX_BYTES bytes without NUL; int bounds and integer
 *   choices lie within +-2^53, so doubles hold them exactly;
 * - a scalar is a string, number or boolean; two scalars are equal when they
 *   are the same string or boolean, or numbers of the same value (1 == 1.0,
 *   but 1 != true);
 * - a condition's values are non-empty, distinct and canonical: the parent's
 *   own choice objects for a categorical parent, JSON integers for an int one;
 * - names are found through a jansson object and choices through a compact
 *   open-addressing table of indexes (4 bytes a slot, no key copies: a space
 *   of 8 x 10,000 choices once held 3 copies of every choice), so parsing
 *   and validation stay linear in the size of the input;
 * - a categorical's choices array is shared (not copied) with the JSON that
 *   bd_space_to_json gives: neither is ever modified.
 * A space is never modified after it is built, so concurrent readers are safe. */
#include "space.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_BYTES 100
#define EXACT_INT_MAX 9007199254740992.0 /* 2^53 */
#define EXACT_INT_MAX_I ((json_int_t)1 << 53)

struct bd_space {
    size_t n;              /* number of parameters */
    bd_param *params;      /* n entries, in declaration order */
    json_t *names;         /* object: name -> integer index into params */
    struct choice_index *choice_index; /* n entries: for a categorical, its choices' positions */
};

/* Positions of a categorical's choices by hash of their scalar key. */
typedef struct choice_index {
    uint32_t *slot; /* cap entries: 0 empty, else position in choices + 1 */
    size_t cap;     /* a power of two, at least twice the choices */
} choice_index;

static json_t *jcheck(json_t *v)
{
    if (!v) {
        fprintf(stderr, "banditd: out of memory building JSON\n");
        abort();
    }
    return v;
}

static void jset(json_t *object, const char *key, json_t *value)
{
    if (json_object_set_new(object, key, jcheck(value)) != 0) {
        fprintf(stderr, "banditd: out of memory building JSON\n");
        abort();
    }
}

static void jappend(json_t *array, json_t *value)
{
    if (json_array_append_new(array, jcheck(value)) != 0) {
        fprintf(stderr, "banditd: out of memory building JSON\n");
        abort();
    }
}

static const char *type_name(bd_param_type t)
{
    switch (t) {
    case BD_PARAM_FLOAT:
        return "float";
    case BD_PARAM_INT:
        return "int";
    default:
        return "categorical";
    }
}

/* The shortest decimal text that reads back as x, without an exponent for
 * magnitudes in [1e-4, 1e16) ("100", not "1e+02"). */
static const char *fmt_num(double x, char buf[32])
{
    int plain = fabs(x) >= 1e-4 && fabs(x) < 1e16;
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, 32, "%.*g", prec, x);
        if (strtod(buf, NULL) == x && !(plain && strchr(buf, 'e')))
            break;
    }
    return buf;
}

/* Compact JSON text of v for messages, cut to fit buf with "...". */
static const char *fmt_json(const json_t *v, char buf[64])
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s)
        snprintf(buf, 64, "(value)");
    else if (strlen(s) < 64)
        snprintf(buf, 64, "%s", s);
    else
        snprintf(buf, 64, "%.60s...", s);
    free(s);
    return buf;
}

static int is_scalar(const json_t *v)
{
    return json_is_string(v) || json_is_number(v) || json_is_boolean(v);
}

static int value_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    return json_equal(a, b);
}

/* Hash key of a scalar: a type letter, then the value; numbers by their
 * double value so that keys are equal exactly when value_equal holds.
 * Returns the key (new, *len bytes, may hold NUL) or NULL for a non-scalar. */
static char *scalar_key(const json_t *v, size_t *len)
{
    char *key;
    if (json_is_string(v)) {
        size_t n = json_string_length(v);
        key = bd_xmalloc(n + 1);
        key[0] = 's';
        memcpy(key + 1, json_string_value(v), n);
        *len = n + 1;
    } else if (json_is_number(v)) {
        double x = json_number_value(v);
        if (x == 0)
            x = 0; /* -0.0 and 0.0 are one value */
        key = bd_xmalloc(32);
        *len = (size_t)snprintf(key, 32, "n%.17g", x);
    } else if (json_is_boolean(v)) {
        key = bd_xstrdup(json_is_true(v) ? "t" : "f");
        *len = 1;
    } else {
        return NULL;
    }
    return key;
}

/* FNV-1a of v's scalar key, or 0 with *ok = 0 for a non-scalar. */
static uint64_t scalar_hash(const json_t *v, int *ok)
{
    size_t len;
    char *key = scalar_key(v, &len);
    uint64_t h = 1469598103934665603ULL;
    *ok = key != NULL;
    for (size_t i = 0; key && i < len; i++)
        h = (h ^ (unsigned char)key[i]) * 1099511628211ULL;
    free(key);
    return h;
}

/* The slot of v in ix: the one holding an equal choice, or the empty one
 * where it would go. */
static size_t probe(const choice_index *ix, const json_t *choices, const json_t *v, uint64_t h)
{
    size_t at = (size_t)h & (ix->cap - 1);
    while (ix->slot[at] && !value_equal(json_array_get(choices, ix->slot[at] - 1), v))
        at = (at + 1) & (ix->cap - 1);
    return at;
}

/* Index of v among the choices of categorical parameter i, or -1. */
static long choice_find(const bd_space *s, size_t i, const json_t *v)
{
    int ok;
    assert(s->params[i].type == BD_PARAM_CATEGORICAL);
    uint64_t h = scalar_hash(v, &ok);
    if (!ok)
        return -1;
    const choice_index *ix = &s->choice_index[i];
    uint32_t at = ix->slot[probe(ix, s->params[i].choices, v, h)];
    return at ? (long)at - 1 : -1;
}

/* Builds the choice index of a scalar array (at most UINT32_MAX - 1
 * choices: bodies are far smaller). Returns -1, or the position of the
 * first choice that repeats an earlier one (that one's in *dup_of). */
static long index_choices(const json_t *choices, choice_index *index, size_t *dup_of)
{
    size_t n = json_array_size(choices), cap = 2;
    while (cap < 2 * n)
        cap *= 2;
    choice_index ix = {bd_xcalloc(cap, sizeof *ix.slot), cap};
    for (size_t k = 0; k < n; k++) {
        const json_t *v = json_array_get(choices, k);
        int ok;
        uint64_t h = scalar_hash(v, &ok);
        assert(ok);
        size_t at = probe(&ix, choices, v, h);
        if (ix.slot[at]) {
            *dup_of = ix.slot[at] - 1;
            free(ix.slot);
            return (long)k;
        }
        ix.slot[at] = (uint32_t)(k + 1);
    }
    *index = ix;
    return -1;
}

/* Checked on the integer itself: beyond 2^53 the conversion to double rounds. */
static int integer_in_exact_range(const json_t *v)
{
    return !json_is_integer(v) ||
           (json_integer_value(v) >= -EXACT_INT_MAX_I && json_integer_value(v) <= EXACT_INT_MAX_I);
}

/* Is v a whole number within +-2^53 (a JSON integer, or a real like 3.0)?
 * A real is accepted for an int but never kept: callers store the JSON
 * integer (parse_cond's canonical values, bd_space_canonical_config). */
static int as_integer(const json_t *v, double *x)
{
    if (!json_is_number(v) || !integer_in_exact_range(v))
        return 0;
    *x = json_number_value(v);
    return *x == floor(*x) && fabs(*x) <= EXACT_INT_MAX;
}

static int cond_accepts(const bd_param_cond *c, const json_t *v)
{
    for (size_t k = 0; k < json_array_size(c->values); k++)
        if (value_equal(v, json_array_get(c->values, k)))
            return 1;
    return 0;
}

/* active[j] for j < upto: all conditions of j hold and its parents are active. */
static void compute_active(const bd_space *s, const json_t *config, unsigned char *active, size_t upto)
{
    for (size_t j = 0; j < upto; j++) {
        const bd_param *p = &s->params[j];
        active[j] = 1;
        for (size_t c = 0; c < p->n_conds && active[j]; c++) {
            size_t parent = p->conds[c].parent;
            const json_t *v = json_object_get(config, s->params[parent].name);
            if (!active[parent] || !v || !cond_accepts(&p->conds[c], v))
                active[j] = 0;
        }
    }
}

/* For a config being built in declaration order (it holds only active
 * parameters): do all of parameter i's conditions hold? */
static int conds_hold(const bd_space *s, size_t i, const json_t *partial)
{
    const bd_param *p = &s->params[i];
    for (size_t c = 0; c < p->n_conds; c++) {
        const json_t *v = json_object_get(partial, s->params[p->conds[c].parent].name);
        if (!v || !cond_accepts(&p->conds[c], v))
            return 0;
    }
    return 1;
}

static bd_space *space_new(size_t n)
{
    bd_space *s = bd_xcalloc(1, sizeof *s);
    s->n = n;
    s->params = bd_xcalloc(n, sizeof *s->params);
    s->choice_index = bd_xcalloc(n, sizeof *s->choice_index);
    s->names = jcheck(json_object());
    return s;
}

void bd_space_free(bd_space *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++) {
        bd_param *p = &s->params[i];
        free(p->name);
        json_decref(p->choices);
        for (size_t c = 0; c < p->n_conds; c++)
            json_decref(p->conds[c].values);
        free(p->conds);
        free(s->choice_index[i].slot);
    }
    free(s->params);
    free(s->choice_index);
    json_decref(s->names);
    free(s);
}

/* ---- parsing ---- */

static const char *pfield(char f[128], size_t i, const char *key)
{
    snprintf(f, 128, "parameters[%zu]%s%s", i, *key ? "." : "", key);
    return f;
}

static int parse_name(const json_t *obj, size_t i, bd_space *s, bd_err *err)
{
    const json_t *nm = json_object_get(obj, "name");
    const json_t *prev;
    const char *name;
    size_t len;
    char f[128];

    pfield(f, i, "name");
    if (!nm)
        return bd_err_set(err, BD_EINVAL, f, "is required");
    if (!json_is_string(nm))
        return bd_err_set(err, BD_EINVAL, f, "must be a string");
    name = json_string_value(nm);
    len = json_string_length(nm);
    if (len == 0)
        return bd_err_set(err, BD_EINVAL, f, "must not be empty");
    if (len > NAME_MAX_BYTES)
        return bd_err_set(err, BD_EINVAL, f, "must be at most %d bytes long", NAME_MAX_BYTES);
    if (strlen(name) != len)
        return bd_err_set(err, BD_EINVAL, f, "must not contain NUL characters");
    prev = json_object_get(s->names, name);
    if (prev)
        return bd_err_set(err, BD_EINVAL, f, "duplicates parameters[%lld].name (\"%s\")",
                          (long long)json_integer_value(prev), name);
    s->params[i].name = bd_xstrdup(name);
    jset(s->names, name, json_integer((json_int_t)i));
    return 0;
}

static int parse_type(const json_t *obj, size_t i, bd_param *p, bd_err *err)
{
    const json_t *t = json_object_get(obj, "type");
    const char *v = json_string_value(t);
    char f[128];

    pfield(f, i, "type");
    if (!t)
        return bd_err_set(err, BD_EINVAL, f, "is required");
    if (v && strcmp(v, "float") == 0)
        p->type = BD_PARAM_FLOAT;
    else if (v && strcmp(v, "int") == 0)
        p->type = BD_PARAM_INT;
    else if (v && strcmp(v, "categorical") == 0)
        p->type = BD_PARAM_CATEGORICAL;
    else
        return bd_err_set(err, BD_EINVAL, f, "must be \"float\", \"int\" or \"categorical\"");
    return 0;
}

/* Every key must be known and apply to the parameter's type. */
static int check_keys(const json_t *obj, size_t i, bd_param_type type, bd_err *err)
{
    char f[128];

    for (void *it = json_object_iter((json_t *)obj); it; it = json_object_iter_next((json_t *)obj, it)) {
        const char *key = json_object_iter_key(it);
        int numeric = strcmp(key, "low") == 0 || strcmp(key, "high") == 0 || strcmp(key, "log") == 0;
        int choices = strcmp(key, "choices") == 0;
        if (strcmp(key, "name") == 0 || strcmp(key, "type") == 0 || strcmp(key, "when") == 0)
            continue;
        if ((numeric && type != BD_PARAM_CATEGORICAL) || (choices && type == BD_PARAM_CATEGORICAL))
            continue;
        pfield(f, i, key);
        if (numeric || choices)
            return bd_err_set(err, BD_EINVAL, f, "is not allowed for a %s parameter", type_name(type));
        return bd_err_set(err, BD_EINVAL, f,
                          "is not a parameter field (expected name, type, low, high, log, "
                          "choices or when)");
    }
    return 0;
}

static int parse_bound(const json_t *obj, size_t i, const char *key, int integer, double *x, bd_err *err)
{
    const json_t *v = json_object_get(obj, key);
    char f[128];

    pfield(f, i, key);
    if (!v)
        return bd_err_set(err, BD_EINVAL, f, "is required");
    if (!json_is_number(v))
        return bd_err_set(err, BD_EINVAL, f, "must be a number");
    *x = json_number_value(v);
    if (!isfinite(*x))
        return bd_err_set(err, BD_EINVAL, f, "must be finite");
    if (integer && *x != floor(*x))
        return bd_err_set(err, BD_EINVAL, f, "must be an integer");
    if (integer && (fabs(*x) > EXACT_INT_MAX || !integer_in_exact_range(v)))
        return bd_err_set(err, BD_EINVAL, f, "must be between -9007199254740992 and 9007199254740992");
    return 0;
}

static int parse_bounds(const json_t *obj, size_t i, bd_param *p, bd_err *err)
{
    int integer = p->type == BD_PARAM_INT;
    const json_t *log = json_object_get(obj, "log");
    char f[128], num[32];
    int rc;

    if ((rc = parse_bound(obj, i, "low", integer, &p->low, err)) != 0)
        return rc;
    if ((rc = parse_bound(obj, i, "high", integer, &p->high, err)) != 0)
        return rc;
    if (log && !json_is_boolean(log))
        return bd_err_set(err, BD_EINVAL, pfield(f, i, "log"), "must be true or false");
    p->log = json_is_true(log);
    if (integer && p->high < p->low)
        return bd_err_set(err, BD_EINVAL, pfield(f, i, "high"), "must be at least low (%s)", fmt_num(p->low, num));
    if (!integer && p->high <= p->low)
        return bd_err_set(err, BD_EINVAL, pfield(f, i, "high"), "must be greater than low (%s)", fmt_num(p->low, num));
    if (!isfinite(p->high - p->low))
        return bd_err_set(err, BD_EINVAL, pfield(f, i, "high"),
                          "is too far from low: high - low is not a finite number");
    if (p->log && p->low <= 0)
        return bd_err_set(err, BD_EINVAL, pfield(f, i, "low"), "must be greater than 0 when log is true");
    return 0;
}

static int parse_choices(const json_t *obj, size_t i, bd_space *s, bd_err *err)
{
    const json_t *ch = json_object_get(obj, "choices");
    size_t k, dup_of = 0;
    long dup;
    char f[128], text[64];

    pfield(f, i, "choices");
    if (!ch)
        return bd_err_set(err, BD_EINVAL, f, "is required");
    if (!json_is_array(ch))
        return bd_err_set(err, BD_EINVAL, f, "must be an array");
    if (json_array_size(ch) == 0)
        return bd_err_set(err, BD_EINVAL, f, "must not be empty");
    for (k = 0; k < json_array_size(ch); k++) {
        const json_t *v = json_array_get(ch, k);
        snprintf(f, sizeof f, "parameters[%zu].choices[%zu]", i, k);
        if (!is_scalar(v))
            return bd_err_set(err, BD_EINVAL, f, "must be a string, number or boolean");
        if (!integer_in_exact_range(v))
            return bd_err_set(err, BD_EINVAL, f, "must be between -9007199254740992 and 9007199254740992");
    }
    dup = index_choices(ch, &s->choice_index[i], &dup_of);
    if (dup >= 0) {
        snprintf(f, sizeof f, "parameters[%zu].choices[%ld]", i, dup);
        return bd_err_set(err, BD_EINVAL, f, "duplicates choices[%zu] (%s)", dup_of,
                          fmt_json(json_array_get(ch, dup_of), text));
    }
    s->params[i].choices = jcheck(json_deep_copy(ch));
    return 0;
}

/* Is a parameter called name declared after position i? (For the message.) */
static int declared_after(const json_t *params, size_t i, const char *name)
{
    for (size_t j = i + 1; j < json_array_size(params); j++) {
        const char *other = json_string_value(json_object_get(json_array_get(params, j), "name"));
        if (other && strcmp(other, name) == 0)
            return 1;
    }
    return 0;
}

/* One "when" entry: parent `key` must take one of `vals`. Fills *c (values
 * canonical, see the file comment). f is the entry's field path. */
static int parse_cond(const bd_space *s, const json_t *params, size_t i, const char *key, const json_t *vals,
                      bd_param_cond *c, const char *f, bd_err *err)
{
    const json_t *jidx = json_object_get(s->names, key);
    const bd_param *par;
    json_t *seen = NULL;
    char text[64], lo[32], hi[32];
    size_t k, pi;
    int rc = 0;

    if (!jidx && declared_after(params, i, key))
        return bd_err_set(err, BD_EINVAL, f,
                          "names parameter \"%s\", declared after this one (parents must come "
                          "first)",
                          key);
    if (!jidx)
        return bd_err_set(err, BD_EINVAL, f, "names no parameter (there is no \"%s\")", key);
    pi = (size_t)json_integer_value(jidx);
    if (pi == i)
        return bd_err_set(err, BD_EINVAL, f, "a parameter cannot depend on itself");
    par = &s->params[pi];
    if (par->type == BD_PARAM_FLOAT)
        return bd_err_set(err, BD_EINVAL, f, "names float parameter \"%s\"; a parent must be categorical or int", key);
    if (!json_is_array(vals) || json_array_size(vals) == 0)
        return bd_err_set(err, BD_EINVAL, f, "must be a non-empty array of values of \"%s\"", key);

    c->parent = pi;
    c->values = jcheck(json_array());
    seen = jcheck(json_object());
    for (k = 0; k < json_array_size(vals); k++) {
        const json_t *v = json_array_get(vals, k);
        json_t *canon;
        char *skey;
        size_t len;
        double x;
        if (par->type == BD_PARAM_CATEGORICAL) {
            long ci = choice_find(s, pi, v);
            if (ci < 0) {
                rc = bd_err_set(err, BD_EINVAL, f, "%s is not one of the choices of \"%s\"", fmt_json(v, text), key);
                goto out;
            }
            canon = jcheck(json_deep_copy(json_array_get(par->choices, (size_t)ci)));
        } else {
            if (!as_integer(v, &x) || x < par->low || x > par->high) {
                rc = bd_err_set(err, BD_EINVAL, f, "%s is not an integer in [%s, %s], the range of \"%s\"",
                                fmt_json(v, text), fmt_num(par->low, lo), fmt_num(par->high, hi), key);
                goto out;
            }
            canon = jcheck(json_integer((json_int_t)x));
        }
        skey = scalar_key(canon, &len);
        if (json_object_getn(seen, skey, len)) {
            free(skey);
            json_decref(canon);
            rc = bd_err_set(err, BD_EINVAL, f, "lists %s more than once", fmt_json(v, text));
            goto out;
        }
        if (json_object_setn_new_nocheck(seen, skey, len, json_true()) != 0)
            abort();
        free(skey);
        jappend(c->values, canon);
    }
out:
    json_decref(seen);
    return rc;
}

static int parse_when(const json_t *obj, const json_t *params, size_t i, bd_space *s, bd_err *err)
{
    const json_t *w = json_object_get(obj, "when");
    bd_param *p = &s->params[i];
    size_t c = 0;
    char f[128];
    int rc;

    if (!w)
        return 0;
    if (!json_is_object(w))
        return bd_err_set(err, BD_EINVAL, pfield(f, i, "when"),
                          "must be an object mapping parent names to arrays of values");
    if (json_object_size(w) == 0)
        return 0;
    p->n_conds = json_object_size(w);
    p->conds = bd_xcalloc(p->n_conds, sizeof *p->conds);
    for (void *it = json_object_iter((json_t *)w); it; it = json_object_iter_next((json_t *)w, it)) {
        const char *key = json_object_iter_key(it);
        snprintf(f, sizeof f, "parameters[%zu].when.%s", i, key);
        if ((rc = parse_cond(s, params, i, key, json_object_iter_value(it), &p->conds[c++], f, err)) != 0)
            return rc;
    }
    return 0;
}

static int parse_param(const json_t *params, size_t i, bd_space *s, bd_err *err)
{
    const json_t *obj = json_array_get(params, i);
    bd_param *p = &s->params[i];
    char f[128];
    int rc;

    if (!json_is_object(obj))
        return bd_err_set(err, BD_EINVAL, pfield(f, i, ""), "must be an object");
    if ((rc = parse_name(obj, i, s, err)) != 0 || (rc = parse_type(obj, i, p, err)) != 0 ||
        (rc = check_keys(obj, i, p->type, err)) != 0)
        return rc;
    if (p->type == BD_PARAM_CATEGORICAL)
        rc = parse_choices(obj, i, s, err);
    else
        rc = parse_bounds(obj, i, p, err);
    if (rc)
        return rc;
    return parse_when(obj, params, i, s, err);
}

int bd_space_parse(const json_t *params, bd_space **out, bd_err *err)
{
    bd_space *s = NULL;
    int rc = 0;

    assert(out);
    *out = NULL;
    if (!json_is_array(params)) {
        rc = bd_err_set(err, BD_EINVAL, "parameters", "must be an array of parameter objects");
        goto out;
    }
    /* An empty list is a space: a define-by-run study declares nothing and
     * its trials ask for parameters as they run (study_def.h). */
    s = space_new(json_array_size(params));
    for (size_t i = 0; i < s->n; i++)
        if ((rc = parse_param(params, i, s, err)) != 0)
            goto out;
    *out = s;
    s = NULL;
out:
    bd_space_free(s);
    return rc;
}

/* ---- accessors and canonical JSON ---- */

size_t bd_space_size(const bd_space *s)
{
    return s->n;
}

const bd_param *bd_space_param(const bd_space *s, size_t i)
{
    assert(i < s->n);
    return &s->params[i];
}

long bd_space_find(const bd_space *s, const char *name)
{
    const json_t *idx = name ? json_object_get(s->names, name) : NULL;
    return idx ? (long)json_integer_value(idx) : -1;
}

/* Canonical form: name, type, then low/high/log ("log" always present;
 * int bounds as JSON integers, float bounds as reals) or choices, then
 * "when" only for a conditional parameter, its values canonical. */
json_t *bd_space_to_json(const bd_space *s)
{
    json_t *arr = jcheck(json_array());
    for (size_t i = 0; i < s->n; i++) {
        const bd_param *p = &s->params[i];
        json_t *o = jcheck(json_object());
        jset(o, "name", json_string(p->name));
        jset(o, "type", json_string(type_name(p->type)));
        if (p->type == BD_PARAM_INT) {
            jset(o, "low", json_integer((json_int_t)p->low));
            jset(o, "high", json_integer((json_int_t)p->high));
        } else if (p->type == BD_PARAM_FLOAT) {
            jset(o, "low", json_real(p->low));
            jset(o, "high", json_real(p->high));
        }
        if (p->type != BD_PARAM_CATEGORICAL)
            jset(o, "log", json_boolean(p->log));
        else
            jset(o, "choices", json_incref(p->choices));
        if (p->n_conds) {
            json_t *w = jcheck(json_object());
            for (size_t c = 0; c < p->n_conds; c++)
                jset(w, s->params[p->conds[c].parent].name, json_deep_copy(p->conds[c].values));
            jset(o, "when", w);
        }
        jappend(arr, o);
    }
    return arr;
}

/* ---- sampling ---- */

/* Float: uniform on [low, high], or uniform in log space when log. */
static double sample_float(const bd_param *p, bd_rng *rng)
{
    double u = bd_rng_uniform(rng), x;
    if (p->log)
        x = exp(log(p->low) + u * (log(p->high) - log(p->low)));
    else
        x = p->low + u * (p->high - p->low);
    return fmin(fmax(x, p->low), p->high);
}

/* Int: uniform over the integers of [low, high]. With log, x is drawn
 * log-uniformly on [low - 0.5, high + 0.5] (low >= 1, so low - 0.5 > 0), then
 * rounded to the nearest integer and clamped to [low, high]; so integer k has
 * probability log((k + 0.5) / (k - 0.5)) / log((high + 0.5) / (low - 0.5)),
 * every integer of the range can occur, and the end points are not favoured. */
static json_int_t sample_int(const bd_param *p, bd_rng *rng)
{
    if (p->log) {
        double a = log(p->low - 0.5), b = log(p->high + 0.5);
        double x = round(exp(a + bd_rng_uniform(rng) * (b - a)));
        return (json_int_t)fmin(fmax(x, p->low), p->high);
    }
    /* In integers: the span can reach 2^54 + 1, beyond what doubles hold exactly. */
    int64_t low = (int64_t)p->low;
    uint64_t span = (uint64_t)((int64_t)p->high - low) + 1;
    return (json_int_t)(low + (int64_t)bd_rng_below(rng, span));
}

json_t *bd_space_sample(const bd_space *s, bd_rng *rng)
{
    json_t *config = jcheck(json_object());
    for (size_t i = 0; i < s->n; i++) {
        const bd_param *p = &s->params[i];
        json_t *v;
        if (!conds_hold(s, i, config))
            continue;
        switch (p->type) {
        case BD_PARAM_FLOAT:
            v = json_real(sample_float(p, rng));
            break;
        case BD_PARAM_INT:
            v = json_integer(sample_int(p, rng));
            break;
        default:
            v = json_deep_copy(json_array_get(p->choices, bd_rng_below(rng, json_array_size(p->choices))));
            break;
        }
        jset(config, p->name, v);
    }
    return config;
}

/* ---- activity and validation ---- */

int bd_space_is_active(const bd_space *s, size_t i, const json_t *config)
{
    unsigned char *active;
    int r;
    assert(i < s->n);
    if (s->params[i].n_conds == 0)
        return 1;
    active = bd_xcalloc(i + 1, 1);
    compute_active(s, config, active, i + 1);
    r = active[i];
    free(active);
    return r;
}

/* Message for parameter i present in config while inactive: the first
 * condition that fails. */
static int inactive_error(const bd_space *s, size_t i, const json_t *config, const unsigned char *active, const char *f,
                          bd_err *err)
{
    const bd_param *p = &s->params[i];
    char text[64];
    for (size_t c = 0; c < p->n_conds; c++) {
        const bd_param *par = &s->params[p->conds[c].parent];
        const json_t *v = json_object_get(config, par->name);
        if (!active[p->conds[c].parent] || !v)
            return bd_err_set(err, BD_EINVAL, f, "must be left out: its parent \"%s\" is inactive", par->name);
        if (!cond_accepts(&p->conds[c], v))
            return bd_err_set(err, BD_EINVAL, f, "must be left out: it is used only when \"%s\" is one of %s",
                              par->name, fmt_json(p->conds[c].values, text));
    }
    return bd_err_set(err, BD_EINVAL, f, "must be left out: it is inactive");
}

static int check_value(const bd_space *s, size_t i, const json_t *v, const char *f, bd_err *err)
{
    const bd_param *p = &s->params[i];
    char lo[32], hi[32], text[64];
    double x;

    switch (p->type) {
    case BD_PARAM_FLOAT:
        if (!json_is_number(v))
            return bd_err_set(err, BD_EINVAL, f, "must be a number");
        x = json_number_value(v);
        if (!(x >= p->low && x <= p->high))
            return bd_err_set(err, BD_EINVAL, f, "must be in [%s, %s]", fmt_num(p->low, lo), fmt_num(p->high, hi));
        return 0;
    case BD_PARAM_INT:
        if (!as_integer(v, &x) || x < p->low || x > p->high)
            return bd_err_set(err, BD_EINVAL, f, "must be an integer in [%s, %s]", fmt_num(p->low, lo),
                              fmt_num(p->high, hi));
        return 0;
    default:
        if (choice_find(s, i, v) < 0)
            return bd_err_set(err, BD_EINVAL, f, "must be one of %s", fmt_json(p->choices, text));
        return 0;
    }
}

int bd_space_validate_config(const bd_space *s, const json_t *config, bd_err *err)
{
    unsigned char *active = NULL;
    json_t *v;
    char f[128];
    int rc = 0;

    if (!json_is_object(config))
        return bd_err_set(err, BD_EINVAL, "config", "must be an object");
    for (void *it = json_object_iter((json_t *)config); it; it = json_object_iter_next((json_t *)config, it)) {
        const char *key = json_object_iter_key(it);
        if (!json_object_get(s->names, key)) {
            snprintf(f, sizeof f, "config.%s", key);
            return bd_err_set(err, BD_EINVAL, f, "is not a parameter of this search space");
        }
    }
    active = bd_xcalloc(s->n, 1);
    compute_active(s, config, active, s->n);
    for (size_t i = 0; i < s->n; i++) {
        v = json_object_get(config, s->params[i].name);
        snprintf(f, sizeof f, "config.%s", s->params[i].name);
        if (!active[i] && v)
            rc = inactive_error(s, i, config, active, f, err);
        else if (active[i] && !v)
            rc = bd_err_set(err, BD_EINVAL, f, "is required");
        else if (active[i])
            rc = check_value(s, i, v, f, err);
        if (rc)
            goto out;
    }
out:
    free(active);
    return rc;
}

int bd_space_check_value(const bd_space *s, size_t i, const json_t *value, const char *field, bd_err *err)
{
    assert(i < s->n);
    return check_value(s, i, value, field, err);
}

json_t *bd_space_canonical_config(const bd_space *s, const json_t *config)
{
    json_t *out = jcheck(json_object());
    for (void *it = json_object_iter((json_t *)config); it; it = json_object_iter_next((json_t *)config, it)) {
        const char *key = json_object_iter_key(it);
        json_t *v = json_object_iter_value(it), *canon;
        long i = bd_space_find(s, key), ci;
        double x;
        if (i < 0) {
            canon = json_deep_copy(v);
        } else if (s->params[i].type == BD_PARAM_INT) {
            canon = as_integer(v, &x) ? json_integer((json_int_t)x) : json_deep_copy(v);
        } else if (s->params[i].type == BD_PARAM_FLOAT) {
            canon = json_is_number(v) ? json_real(json_number_value(v)) : json_deep_copy(v);
        } else {
            ci = choice_find(s, (size_t)i, v);
            canon = json_deep_copy(ci >= 0 ? json_array_get(s->params[i].choices, (size_t)ci) : v);
        }
        jset(out, key, canon);
    }
    return out;
}

/* ---- unit hypercube ---- */

static double encode_num(const bd_param *p, double x)
{
    double u;
    if (p->high == p->low)
        return 0.5;
    if (p->log)
        u = (log(x) - log(p->low)) / (log(p->high) - log(p->low));
    else
        u = (x - p->low) / (p->high - p->low);
    return fmin(fmax(u, 0.0), 1.0);
}

/* The inverse of encode_num for u in [0, 1]; the end points map exactly. */
static double decode_num(const bd_param *p, double u)
{
    double x;
    if (u <= 0)
        return p->low;
    if (u >= 1)
        return p->high;
    if (p->log)
        x = exp(log(p->low) + u * (log(p->high) - log(p->low)));
    else
        x = p->low + u * (p->high - p->low);
    return fmin(fmax(x, p->low), p->high);
}

int bd_space_encode(const bd_space *s, const json_t *config, double *unit)
{
    unsigned char *active;
    int rc = bd_space_validate_config(s, config, NULL);
    if (rc)
        return rc;
    active = bd_xcalloc(s->n, 1);
    compute_active(s, config, active, s->n);
    for (size_t i = 0; i < s->n; i++) {
        const bd_param *p = &s->params[i];
        const json_t *v = json_object_get(config, p->name);
        if (!active[i])
            unit[i] = 0.5;
        else if (p->type == BD_PARAM_CATEGORICAL)
            unit[i] = (choice_find(s, i, v) + 0.5) / (double)json_array_size(p->choices);
        else
            unit[i] = encode_num(p, json_number_value(v));
    }
    free(active);
    return 0;
}

/* A coordinate outside [0, 1] is clamped to it; NaN reads as 0.5. */
json_t *bd_space_decode(const bd_space *s, const double *unit)
{
    json_t *config = jcheck(json_object());
    for (size_t i = 0; i < s->n; i++) {
        const bd_param *p = &s->params[i];
        double u = isnan(unit[i]) ? 0.5 : fmin(fmax(unit[i], 0.0), 1.0);
        json_t *v;
        if (!conds_hold(s, i, config))
            continue;
        if (p->type == BD_PARAM_FLOAT) {
            v = json_real(decode_num(p, u));
        } else if (p->type == BD_PARAM_INT) {
            double x = fmin(fmax(round(decode_num(p, u)), p->low), p->high);
            v = json_integer((json_int_t)x);
        } else {
            size_t k_n = json_array_size(p->choices);
            size_t k = (size_t)(u * (double)k_n);
            v = json_deep_copy(json_array_get(p->choices, k < k_n ? k : k_n - 1));
        }
        jset(config, p->name, v);
    }
    return config;
}

/* ---- sub-spaces ---- */

/* Copies src into dst, dropping its conditions on `removed` and renumbering
 * the other parents through newidx. */
static void copy_param(bd_param *dst, const bd_param *src, size_t removed, const size_t *newidx)
{
    size_t n = 0;
    dst->name = bd_xstrdup(src->name);
    dst->type = src->type;
    dst->low = src->low;
    dst->high = src->high;
    dst->log = src->log;
    dst->choices = src->choices ? jcheck(json_deep_copy(src->choices)) : NULL;
    for (size_t c = 0; c < src->n_conds; c++)
        n += src->conds[c].parent != removed;
    dst->n_conds = n;
    dst->conds = n ? bd_xcalloc(n, sizeof *dst->conds) : NULL;
    n = 0;
    for (size_t c = 0; c < src->n_conds; c++) {
        if (src->conds[c].parent == removed)
            continue;
        dst->conds[n].parent = newidx[src->conds[c].parent];
        dst->conds[n].values = jcheck(json_deep_copy(src->conds[c].values));
        n++;
    }
}

/* The name's own conditions, if any, are not carried into the sub-space: it
 * describes the parameters given that `name` is active and equals value. A
 * sub-space may be empty (an algorithm without hyperparameters). */
int bd_space_subspace(const bd_space *s, const char *name, const json_t *value, bd_space **out, bd_err *err)
{
    const size_t dropped = (size_t)-1;
    size_t *newidx = NULL, count = 0, dup_of;
    long p = bd_space_find(s, name);
    bd_space *sub = NULL;
    char text[64];
    int rc = 0;

    assert(out);
    *out = NULL;
    if (p < 0 || s->params[p].type != BD_PARAM_CATEGORICAL) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "there is no categorical parameter \"%s\"", name ? name : "(null)");
        goto out;
    }
    if (choice_find(s, (size_t)p, value) < 0) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "%s is not one of the choices of \"%s\"", fmt_json(value, text), name);
        goto out;
    }
    newidx = bd_xcalloc(s->n, sizeof *newidx);
    for (size_t j = 0; j < s->n; j++) {
        const bd_param *q = &s->params[j];
        int keep = j != (size_t)p;
        for (size_t c = 0; c < q->n_conds && keep; c++) {
            size_t parent = q->conds[c].parent;
            keep = parent == (size_t)p ? cond_accepts(&q->conds[c], value) : newidx[parent] != dropped;
        }
        newidx[j] = keep ? count++ : dropped;
    }
    sub = space_new(count);
    for (size_t j = 0; j < s->n; j++) {
        size_t k = newidx[j];
        if (k == dropped)
            continue;
        copy_param(&sub->params[k], &s->params[j], (size_t)p, newidx);
        jset(sub->names, sub->params[k].name, json_integer((json_int_t)k));
        if (sub->params[k].type == BD_PARAM_CATEGORICAL &&
            index_choices(sub->params[k].choices, &sub->choice_index[k], &dup_of) >= 0)
            abort(); /* the choices were distinct in s */
    }
    *out = sub;
out:
    free(newidx);
    return rc;
}
