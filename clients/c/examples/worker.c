/* worker.c: a complete banditd worker in C (clients/c/banditd_client.h).
 *
 * It tunes multinomial logistic regression trained by minibatch SGD, epoch by
 * epoch, on a real dataset read at run time: scikit-learn's bundled CSV files
 * (Debian package python3-sklearn, /usr/lib/python3/dist-packages/sklearn/
 * datasets/data/breast_cancer.csv, iris.csv or wine_data.csv; first line
 * "n_samples,n_features,class names...", then one row of features and a class
 * index per sample). The search space is the learning rate, the L2 penalty
 * and the batch size; the resource is epochs. After every epoch it reports
 * the validation cross-entropy (the study's objective, minimised), stops when
 * the scheduler says so, and completes the trial with its last validation
 * loss (or as diverged when the loss is no longer finite).
 *
 * A promotion (resume_from) continues the checkpoint of the earlier trial of
 * the same configuration when this process trained it (checkpoints are kept
 * in memory, at most MAX_CKPT); otherwise it trains from scratch. Training is
 * deterministic for a (config_id, epoch), so both give the same curve.
 *
 *   banditd-c-worker --url http://127.0.0.1:8080 --token-file DB.admin-token \
 *       --data /usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv \
 *       [--study ID | --scheduler hyperband --options '{"eta":3}' --max-epochs 27] [--worker NAME]
 *
 * Build against an installed library:
 *   cc -std=c11 -O2 worker.c $(pkg-config --cflags --libs banditd-client) -lm -o worker */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <banditd_client.h>

#define MAX_SAMPLES 100000
#define MAX_FEATURES 1000
#define MAX_CLASSES 100
#define MAX_EPOCHS 10000
#define MAX_CKPT 512

/* ------------------------------------------------------------ the data */

typedef struct dataset {
    int n, d, k; /* samples, features, classes */
    double *x;   /* n x d, standardised with the training rows' mean and sd */
    int *y;      /* n class indices in 0..k-1 */
    int n_train; /* rows 0..n_train-1 train, the rest validate (after a fixed shuffle) */
} dataset;

static int load_csv(const char *path, dataset *ds)
{
    FILE *f = fopen(path, "r");
    char *line = NULL;
    size_t cap = 0;
    int rc = -1;
    memset(ds, 0, sizeof *ds);
    if (!f) {
        perror(path);
        return -1;
    }
    if (getline(&line, &cap, f) < 0 || sscanf(line, "%d,%d", &ds->n, &ds->d) != 2 || ds->n < 10 ||
        ds->n > MAX_SAMPLES || ds->d < 1 || ds->d > MAX_FEATURES) {
        fprintf(stderr, "%s: the first line must be n_samples,n_features,... (n 10..%d, d 1..%d)\n", path, MAX_SAMPLES,
                MAX_FEATURES);
        goto out;
    }
    ds->x = calloc((size_t)ds->n * (size_t)ds->d, sizeof *ds->x);
    ds->y = calloc((size_t)ds->n, sizeof *ds->y);
    if (!ds->x || !ds->y)
        goto out;
    for (int i = 0; i < ds->n; i++) {
        char *p, *end;
        if (getline(&line, &cap, f) < 0) {
            fprintf(stderr, "%s: %d rows, the header says %d\n", path, i, ds->n);
            goto out;
        }
        p = line;
        for (int j = 0; j <= ds->d; j++) {
            double v = strtod(p, &end);
            if (end == p || !isfinite(v) || (j < ds->d && *end != ',')) {
                fprintf(stderr, "%s: row %d, column %d is not a number\n", path, i + 2, j + 1);
                goto out;
            }
            if (j < ds->d)
                ds->x[(size_t)i * (size_t)ds->d + (size_t)j] = v;
            else if (v != floor(v) || v < 0 || v >= MAX_CLASSES) {
                fprintf(stderr, "%s: row %d: the class must be an integer in 0..%d\n", path, i + 2, MAX_CLASSES - 1);
                goto out;
            } else {
                ds->y[i] = (int)v;
                if ((int)v + 1 > ds->k)
                    ds->k = (int)v + 1;
            }
            p = end + 1;
        }
    }
    rc = ds->k >= 2 ? 0 : -1;
    if (rc)
        fprintf(stderr, "%s: fewer than two classes\n", path);
out:
    free(line);
    fclose(f);
    return rc;
}

/* A small fixed generator (splitmix64): the split and the SGD order must not
 * depend on the C library. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static void shuffle(int *idx, int n, uint64_t seed)
{
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(mix(&seed) % (uint64_t)(i + 1)), t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* Shuffles the rows once (seed 1), keeps 70% for training and standardises
 * every feature with the training rows' statistics. */
static int split_and_scale(dataset *ds)
{
    int n = ds->n, d = ds->d, *idx = malloc((size_t)n * sizeof *idx), *y = malloc((size_t)n * sizeof *y);
    double *x = malloc((size_t)n * (size_t)d * sizeof *x);
    if (!idx || !y || !x) {
        free(idx), free(y), free(x);
        return -1;
    }
    for (int i = 0; i < n; i++)
        idx[i] = i;
    shuffle(idx, n, 1);
    for (int i = 0; i < n; i++) {
        memcpy(x + (size_t)i * (size_t)d, ds->x + (size_t)idx[i] * (size_t)d, (size_t)d * sizeof *x);
        y[i] = ds->y[idx[i]];
    }
    free(ds->x), free(ds->y), free(idx);
    ds->x = x, ds->y = y;
    ds->n_train = n * 7 / 10;
    for (int j = 0; j < d; j++) {
        double mean = 0, var = 0;
        for (int i = 0; i < ds->n_train; i++)
            mean += x[(size_t)i * (size_t)d + (size_t)j] / ds->n_train;
        for (int i = 0; i < ds->n_train; i++)
            var += pow(x[(size_t)i * (size_t)d + (size_t)j] - mean, 2) / ds->n_train;
        double sd = var > 0 ? sqrt(var) : 1;
        for (int i = 0; i < n; i++)
            x[(size_t)i * (size_t)d + (size_t)j] = (x[(size_t)i * (size_t)d + (size_t)j] - mean) / sd;
    }
    return 0;
}

/* ------------------------------------------------------------ the model */

typedef struct model {
    int64_t trial_id; /* the trial that trained it (a checkpoint's key) */
    int epochs;       /* epochs trained */
    double *w;        /* k x (d + 1): weights and bias per class */
} model;

typedef struct hparams {
    double lr, l2;
    int batch;
    int64_t config_id; /* seeds the SGD order */
} hparams;

/* Class probabilities of row x into p[k]; softmax with the max subtracted. */
static void predict(const dataset *ds, const double *w, const double *x, double *p)
{
    double top = -INFINITY, sum = 0;
    for (int c = 0; c < ds->k; c++) {
        const double *wc = w + (size_t)c * (size_t)(ds->d + 1);
        double z = wc[ds->d];
        for (int j = 0; j < ds->d; j++)
            z += wc[j] * x[j];
        p[c] = z;
        top = z > top ? z : top;
    }
    for (int c = 0; c < ds->k; c++)
        sum += (p[c] = exp(p[c] - top));
    for (int c = 0; c < ds->k; c++)
        p[c] /= sum;
}

/* One epoch of minibatch SGD on the training rows, in an order that depends
 * only on (config_id, epoch). */
static void train_epoch(const dataset *ds, const hparams *h, model *m, int *order, double *grad, double *p)
{
    size_t stride = (size_t)(ds->d + 1), size = (size_t)ds->k * stride;
    for (int i = 0; i < ds->n_train; i++)
        order[i] = i;
    shuffle(order, ds->n_train, (uint64_t)h->config_id * 1000003u + (uint64_t)m->epochs);
    for (int start = 0; start < ds->n_train; start += h->batch) {
        int end = start + h->batch < ds->n_train ? start + h->batch : ds->n_train;
        memset(grad, 0, size * sizeof *grad);
        for (int b = start; b < end; b++) {
            const double *x = ds->x + (size_t)order[b] * (size_t)ds->d;
            predict(ds, m->w, x, p);
            for (int c = 0; c < ds->k; c++) {
                double g = p[c] - (c == ds->y[order[b]]);
                for (int j = 0; j < ds->d; j++)
                    grad[(size_t)c * stride + (size_t)j] += g * x[j];
                grad[(size_t)c * stride + (size_t)ds->d] += g;
            }
        }
        for (size_t i = 0; i < size; i++)
            m->w[i] -= h->lr * (grad[i] / (end - start) + ((i + 1) % stride ? h->l2 * m->w[i] : 0));
    }
    m->epochs++;
}

/* Mean cross-entropy on the validation rows (+inf once the weights blew up). */
static double val_loss(const dataset *ds, const model *m, double *p)
{
    double loss = 0;
    for (int i = ds->n_train; i < ds->n; i++) {
        predict(ds, m->w, ds->x + (size_t)i * (size_t)ds->d, p);
        loss -= log(p[ds->y[i]] > 1e-300 ? p[ds->y[i]] : 1e-300);
    }
    loss /= ds->n - ds->n_train;
    return isfinite(loss) ? loss : INFINITY;
}

/* ------------------------------------------------------------ checkpoints */

static model ckpt[MAX_CKPT]; /* a ring: the oldest is dropped */
static int ckpt_next;

static model *ckpt_find(int64_t trial_id)
{
    for (int i = 0; i < MAX_CKPT; i++)
        if (ckpt[i].w && ckpt[i].trial_id == trial_id)
            return &ckpt[i];
    return NULL;
}

static void ckpt_save(const model *m, size_t size)
{
    model *slot = &ckpt[ckpt_next];
    ckpt_next = (ckpt_next + 1) % MAX_CKPT;
    free(slot->w);
    slot->w = malloc(size * sizeof *slot->w);
    if (!slot->w)
        return; /* no checkpoint: a promotion retrains from scratch */
    memcpy(slot->w, m->w, size * sizeof *slot->w);
    slot->trial_id = m->trial_id;
    slot->epochs = m->epochs;
}

/* ------------------------------------------------------------ one trial */

static int config_number(const json_t *trial, const char *name, double *out)
{
    json_t *v = json_object_get(json_object_get(trial, "config"), name);
    if (!json_is_number(v)) {
        fprintf(stderr, "trial %" JSON_INTEGER_FORMAT ": config.%s is missing or not a number\n",
                json_integer_value(json_object_get(trial, "id")), name);
        return -1;
    }
    *out = json_number_value(v);
    return 0;
}

/* Trains the trial to its budget, reporting each epoch; completes it unless
 * the scheduler stopped it. *stopped counts the stops. Returns 0 or the
 * client's error (a refused report ends the trial, not the worker). */
static int run_trial(bd_client *c, const dataset *ds, const json_t *trial, int *stopped, bd_client_err *err)
{
    int64_t id = json_integer_value(json_object_get(trial, "id"));
    json_t *from = json_object_get(trial, "resume_from");
    double budget = json_number_value(json_object_get(trial, "budget")), lr, l2, batch;
    size_t size = (size_t)ds->k * (size_t)(ds->d + 1);
    hparams h = {.config_id = json_integer_value(json_object_get(trial, "config_id"))};
    model m = {.trial_id = id};
    int *order = malloc((size_t)ds->n_train * sizeof *order), stop = 0, rc = 0;
    int epochs = budget >= 1 && budget <= MAX_EPOCHS ? (int)ceil(budget) : 0; /* 0: refused below */
    double *grad = malloc(size * sizeof *grad), *p = malloc((size_t)ds->k * sizeof *p), loss = INFINITY;
    struct timespec t0, t1;
    m.w = calloc(size, sizeof *m.w);
    if (!order || !grad || !p || !m.w) {
        rc = bd_client_fail(c, id, "worker out of memory", err);
        goto out;
    }
    if (config_number(trial, "lr", &lr) || config_number(trial, "l2", &l2) || config_number(trial, "batch", &batch) ||
        !(epochs >= 1 && epochs <= MAX_EPOCHS)) {
        rc = bd_client_fail(c, id, "bad configuration or budget", err);
        goto out;
    }
    h.lr = lr, h.l2 = l2, h.batch = batch < 1 ? 1 : (int)batch;
    model *prev = json_is_integer(from) ? ckpt_find(json_integer_value(from)) : NULL;
    if (prev && prev->epochs <= epochs) {
        memcpy(m.w, prev->w, size * sizeof *m.w);
        m.epochs = prev->epochs;
        loss = val_loss(ds, &m, p); /* the answer if the budget needs no more epochs */
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (m.epochs < epochs && !stop) {
        train_epoch(ds, &h, &m, order, grad, p);
        loss = val_loss(ds, &m, p);
        if (!isfinite(loss))
            break;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if ((rc = bd_client_report(c, id, m.epochs, loss, secs, &stop, err)))
            goto out;
    }
    ckpt_save(&m, size);
    if (stop) {
        (*stopped)++;
    } else if (!isfinite(loss)) {
        bd_client_completion how = {.kind = BD_CLIENT_DONE_DIVERGED, .runtime = -1, .elapsed_seconds = -1};
        rc = bd_client_complete_ex(c, id, &how, NULL, err);
    } else {
        rc = bd_client_complete(c, id, loss, err);
    }
out:
    free(order), free(grad), free(p), free(m.w);
    return rc;
}

/* ------------------------------------------------------------ main */

static void usage(FILE *f)
{
    fprintf(f, "usage: banditd-c-worker --url URL --token-file FILE --data CSV\n"
               "         [--study ID | --scheduler NAME [--options JSON] [--max-epochs N] [--name NAME] [--seed N]\n"
               "          [--if-exists error|load|create]]\n"
               "         [--worker NAME] [--max-trials N]\n"
               "CSV: a scikit-learn bundled dataset, e.g.\n"
               "  /usr/lib/python3/dist-packages/sklearn/datasets/data/breast_cancer.csv (iris.csv, wine_data.csv)\n");
}

static char *read_token(const char *path)
{
    FILE *f = fopen(path, "r");
    char buf[4097] = "";
    if (!f || !fgets(buf, sizeof buf, f)) {
        if (f)
            fclose(f);
        return NULL;
    }
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf[0] ? strdup(buf) : NULL;
}

/* The study this worker creates: lr, l2 and batch size, epochs as resource.
 * options is stolen. The bounds say where a loss lies for BO-BOS. */
static json_t *study_definition(const char *name, const char *scheduler, json_t *options, int max_epochs, int seed)
{
    /* clang-format off */
    json_t *params = json_pack("[{s:s, s:s, s:f, s:f, s:b}, {s:s, s:s, s:f, s:f, s:b}, {s:s, s:s, s:i, s:i, s:b}]",
        "name", "lr",    "type", "float", "low", 1e-3, "high", 10.0, "log", 1,
        "name", "l2",    "type", "float", "low", 1e-6, "high", 1e-1, "log", 1,
        "name", "batch", "type", "int",   "low", 1,    "high", 64,   "log", 1);
    return json_pack("{s:s, s:o, s:{s:s, s:s, s:[f, f]}, s:{s:s, s:i, s:i, s:b}, s:{s:s, s:o}, s:i}",
        "name", name,
        "parameters", params,
        "objective", "metric", "val_loss", "goal", "minimize", "bounds", 0.0, 1.0,
        "resource", "name", "epochs", "min", 1, "max", max_epochs, "integer", 1,
        "scheduler", "name", scheduler, "options", options,
        "seed", seed);
    /* clang-format on */
}

int main(int argc, char **argv)
{
    const char *url = NULL, *token_file = NULL, *data = NULL, *scheduler = NULL, *options = "{}";
    const char *name = NULL, *worker = "c-worker", *if_exists = NULL;
    char default_name[64];
    int64_t study_id = 0;
    int max_epochs = 27, seed = 1, max_trials = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        if (strcmp(a, "--url") == 0)
            url = v;
        else if (strcmp(a, "--token-file") == 0)
            token_file = v;
        else if (strcmp(a, "--data") == 0)
            data = v;
        else if (strcmp(a, "--study") == 0)
            study_id = strtoll(v, NULL, 10);
        else if (strcmp(a, "--scheduler") == 0)
            scheduler = v;
        else if (strcmp(a, "--options") == 0)
            options = v;
        else if (strcmp(a, "--max-epochs") == 0)
            max_epochs = atoi(v);
        else if (strcmp(a, "--name") == 0)
            name = v;
        else if (strcmp(a, "--if-exists") == 0)
            if_exists = v;
        else if (strcmp(a, "--seed") == 0)
            seed = atoi(v);
        else if (strcmp(a, "--worker") == 0)
            worker = v;
        else if (strcmp(a, "--max-trials") == 0)
            max_trials = atoi(v);
        else {
            usage(stderr);
            return 2;
        }
    }
    if (!url || !token_file || !data || (study_id < 1) == !scheduler || max_epochs < 1 || max_epochs > MAX_EPOCHS) {
        usage(stderr);
        return 2;
    }
    if (!name) { /* a study name is unique among the caller's live studies */
        snprintf(default_name, sizeof default_name, "c-worker-%lld-%ld", (long long)time(NULL), (long)getpid());
        name = default_name;
    }
    dataset ds;
    if (load_csv(data, &ds) || split_and_scale(&ds))
        return 1;
    char *token = read_token(token_file);
    if (!token) {
        fprintf(stderr, "%s: no token\n", token_file);
        return 1;
    }

    /* ---- the tuning loop: connect, create, suggest / report / complete, print the best ---- */
    bd_client *c = NULL;
    bd_client_err err = {0};
    json_t *answer = NULL, *study = NULL;
    int rc = 1, trials = 0, stopped = 0;
    if (bd_client_new(url, token, &c, &err))
        goto fail;
    if (scheduler) {
        json_t *def = study_definition(name, scheduler, json_loads(options, 0, NULL), max_epochs, seed);
        if (!def)
            snprintf(err.message, sizeof err.message, "--options is not a JSON object");
        else if (if_exists) /* "load": run on the same-named study when its definition matches */
            json_object_set_new(def, "if_exists", json_string(if_exists));
        int r = def ? bd_client_create_study(c, def, &study, &err) : -1;
        json_decref(def);
        if (r)
            goto fail;
        study_id = json_integer_value(json_object_get(study, "id"));
        json_decref(study);
        study = NULL;
        printf("study %" PRId64 "\n", study_id);
    }
    while (max_trials == 0 || trials < max_trials) {
        if (bd_client_suggest(c, study_id, worker, 1, &answer, &err))
            goto fail;
        json_t *list = json_object_get(answer, "trials");
        if (json_array_size(list) > 0) {
            if (run_trial(c, &ds, json_array_get(list, 0), &stopped, &err) && err.status != 409)
                goto fail; /* 409: the trial ended meanwhile (lease expired): go on */
            trials++;
        } else if (json_is_true(json_object_get(answer, "done"))) {
            break;
        } else {
            json_int_t ms = json_integer_value(json_object_get(answer, "retry_after_ms"));
            struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
            nanosleep(ms > 0 && ms < 60000 ? &ts : &(struct timespec){0, 100000000L}, NULL);
        }
        json_decref(answer);
        answer = NULL;
    }
    if (bd_client_get_study(c, study_id, &study, &err))
        goto fail;
    json_t *best = json_object_get(study, "incumbent");
    char *config = json_dumps(json_object_get(best, "config"), JSON_COMPACT | JSON_SORT_KEYS);
    printf("ran %d trials, %d stopped early; best val_loss %.6g at %g epochs: %s\n", trials, stopped,
           json_number_value(json_object_get(best, "value")), json_number_value(json_object_get(best, "budget")),
           config ? config : "none");
    free(config);
    rc = 0;
    goto out;
fail:
    fprintf(stderr, "banditd-c-worker: HTTP %ld %s: %s%s%s%s\n", err.status, err.code, err.message,
            err.field[0] ? " (field " : "", err.field, err.field[0] ? ")" : "");
out:
    /* ---- end of the tuning loop ---- */
    json_decref(answer);
    json_decref(study);
    bd_client_free(c);
    free(token);
    free(ds.x), free(ds.y);
    for (int i = 0; i < MAX_CKPT; i++)
        free(ckpt[i].w);
    return rc;
}
