/* c_client_cli.c: one call of the C client (clients/c/banditd_client.h) per
 * run, for tests/integration/test_c_client.py to drive against a real
 * daemon. Prints one JSON object on stdout: {"rc", "status", "code",
 * "message", "field", "answer", "stop"} (answer: the call's JSON result or
 * null). Exit status 0 whenever the call ran, 2 on bad usage.
 *
 *   c_client_cli URL TOKEN_FILE|- [--retries N] [--timeout-ms N] [--max-response N] [--busy-wait-ms N]
 *                OP ARGS...
 *
 * OPs: get_study ID | create_study JSON | list_studies AFTER LIMIT NAME|- |
 * delete_study ID | suggest STUDY WORKER|- COUNT | report TRIAL STEP VALUE ELAPSED |
 * complete TRIAL VALUE | complete_diverged TRIAL REASON | complete_timeout TRIAL |
 * fail TRIAL REASON|- | heartbeat TRIAL | get_trial TRIAL |
 * list_trials STUDY STATE|- AFTER LIMIT INCLUDE_MEASUREMENTS ORDER_BEST |
 * export_csv STUDY OUTFILE | request METHOD PATH BODY|- KEY|- */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "banditd_client.h"

static char *read_token(const char *path)
{
    char buf[4097] = "";
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    if (!fgets(buf, sizeof buf, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return strdup(buf);
}

static const char *opt(const char *s)
{
    return strcmp(s, "-") == 0 ? NULL : s;
}

static int need(int have, int want)
{
    if (have >= want)
        return 1;
    fprintf(stderr, "c_client_cli: missing arguments\n");
    exit(2);
}

int main(int argc, char **argv)
{
    bd_client *c = NULL;
    bd_client_err err = {0};
    json_t *answer = NULL;
    char *token = NULL;
    int rc, i = 3, stop = -1;
    if (argc < 4) {
        fprintf(stderr, "usage: c_client_cli URL TOKEN_FILE|- [options] OP ARGS...\n");
        return 2;
    }
    if (strcmp(argv[2], "-") != 0 && !(token = read_token(argv[2]))) {
        perror(argv[2]);
        return 2;
    }
    rc = bd_client_new(argv[1], token, &c, &err);
    free(token);
    for (; !rc && i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        long long v = strtoll(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--retries") == 0)
            rc = bd_client_set_retries(c, (int)v, 20, 200);
        else if (strcmp(argv[i], "--timeout-ms") == 0)
            rc = bd_client_set_timeout(c, (long)v);
        else if (strcmp(argv[i], "--max-response") == 0)
            rc = bd_client_set_max_response(c, v);
        else if (strcmp(argv[i], "--busy-wait-ms") == 0)
            rc = bd_client_set_busy_wait(c, (long)v);
        else
            return 2;
        if (rc)
            snprintf(err.message, sizeof err.message, "%s refused", argv[i]);
    }
    int n = argc - i;
    char **a = argv + i;
    if (rc)
        goto print;
    need(n, 1);
    if (strcmp(a[0], "get_study") == 0 && need(n, 2)) {
        rc = bd_client_get_study(c, strtoll(a[1], NULL, 10), &answer, &err);
    } else if (strcmp(a[0], "create_study") == 0 && need(n, 2)) {
        json_t *def = json_loads(a[1], 0, NULL);
        rc = bd_client_create_study(c, def, &answer, &err);
        json_decref(def);
    } else if (strcmp(a[0], "list_studies") == 0 && need(n, 4)) {
        rc = bd_client_list_studies(c, strtoll(a[1], NULL, 10), atoi(a[2]), opt(a[3]), &answer, &err);
    } else if (strcmp(a[0], "delete_study") == 0 && need(n, 2)) {
        rc = bd_client_delete_study(c, strtoll(a[1], NULL, 10), &err);
    } else if (strcmp(a[0], "suggest") == 0 && need(n, 4)) {
        rc = bd_client_suggest(c, strtoll(a[1], NULL, 10), opt(a[2]), atoi(a[3]), &answer, &err);
    } else if (strcmp(a[0], "report") == 0 && need(n, 5)) {
        rc = bd_client_report(c, strtoll(a[1], NULL, 10), strtod(a[2], NULL), strtod(a[3], NULL), strtod(a[4], NULL),
                              &stop, &err);
    } else if (strcmp(a[0], "complete") == 0 && need(n, 3)) {
        rc = bd_client_complete(c, strtoll(a[1], NULL, 10), strtod(a[2], NULL), &err);
    } else if (strcmp(a[0], "complete_diverged") == 0 && need(n, 3)) {
        bd_client_completion how = {
            .kind = BD_CLIENT_DONE_DIVERGED, .runtime = -1, .elapsed_seconds = -1, .reason = a[2]};
        rc = bd_client_complete_ex(c, strtoll(a[1], NULL, 10), &how, &answer, &err);
    } else if (strcmp(a[0], "complete_timeout") == 0 && need(n, 2)) {
        bd_client_completion how = {.kind = BD_CLIENT_DONE_TIMEOUT, .runtime = -1, .elapsed_seconds = 1.5};
        rc = bd_client_complete_ex(c, strtoll(a[1], NULL, 10), &how, &answer, &err);
    } else if (strcmp(a[0], "fail") == 0 && need(n, 3)) {
        rc = bd_client_fail(c, strtoll(a[1], NULL, 10), opt(a[2]), &err);
    } else if (strcmp(a[0], "heartbeat") == 0 && need(n, 2)) {
        double until = 0;
        rc = bd_client_heartbeat(c, strtoll(a[1], NULL, 10), &until, &err);
        answer = rc ? NULL : json_pack("{s:f}", "lease_expires_at", until);
    } else if (strcmp(a[0], "get_trial") == 0 && need(n, 2)) {
        rc = bd_client_get_trial(c, strtoll(a[1], NULL, 10), &answer, &err);
    } else if (strcmp(a[0], "list_trials") == 0 && need(n, 7)) {
        bd_client_trial_query q = {.state = opt(a[2]),
                                   .after = strtoll(a[3], NULL, 10),
                                   .limit = atoi(a[4]),
                                   .include_measurements = atoi(a[5]),
                                   .order_best = atoi(a[6])};
        rc = bd_client_list_trials(c, strtoll(a[1], NULL, 10), &q, &answer, &err);
    } else if (strcmp(a[0], "export_csv") == 0 && need(n, 3)) {
        FILE *out = fopen(a[2], "w");
        rc = out ? bd_client_export_csv(c, strtoll(a[1], NULL, 10), out, &err) : -100;
        if (out)
            fclose(out);
    } else if (strcmp(a[0], "request") == 0 && need(n, 5)) {
        json_t *body = opt(a[3]) ? json_loads(a[3], JSON_DECODE_ANY, NULL) : NULL;
        long status = 0;
        rc = bd_client_request(c, a[1], a[2], body, opt(a[4]), &status, &answer, &err);
        json_decref(body);
        if (!rc)
            err.status = status;
    } else {
        fprintf(stderr, "c_client_cli: unknown op %s\n", a[0]);
        bd_client_free(c);
        return 2;
    }
print:;
    json_t *out = json_pack("{s:i, s:i, s:s, s:s, s:s, s:O?, s:i}", "rc", rc, "status", (json_int_t)err.status, "code",
                            err.code, "message", err.message, "field", err.field, "answer", answer, "stop", stop);
    char *text = json_dumps(out, JSON_COMPACT);
    puts(text ? text : "{}");
    free(text);
    json_decref(out);
    json_decref(answer);
    bd_client_free(c);
    return 0;
}
