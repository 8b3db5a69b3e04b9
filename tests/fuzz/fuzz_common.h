/* fuzz_common.h: what the libFuzzer targets of tests/fuzz/ share: a check
 * that aborts with a message (libFuzzer then saves the input), the answer
 * serialization of api/http_server.c with its round-trip oracle, and an
 * in-memory engine with known tokens.
 *
 * Every target is built with -fsanitize=fuzzer,address,undefined (CMake
 * option BD_FUZZ=ON, see tests/fuzz/README.md); an abort here, a sanitizer
 * report or a leak fails the run. */
#ifndef BD_FUZZ_COMMON_H
#define BD_FUZZ_COMMON_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/http.h"
#include "api/json_out.h"
#include "server/engine.h"

/* An oracle: a property the code must keep for every input. */
#define FUZZ_CHECK(cond, ...)                                                                                          \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);                            \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fputc('\n', stderr);                                                                                       \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

/* Serializes j as the server does (compact, then the shortest reals) and
 * checks that the bytes parse back to an equal value. */
static inline void fuzz_check_serialization(const json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    FUZZ_CHECK(text != NULL, "an answer cannot be serialized");
    size_t n = bd_json_shorten_reals(text, strlen(text));
    json_error_t jerr;
    json_t *back = json_loadb(text, n, JSON_DECODE_ANY, &jerr);
    FUZZ_CHECK(back != NULL, "the shortened answer is not JSON (%s): %.*s", jerr.text, (int)n, text);
    FUZZ_CHECK(json_equal(back, (json_t *)j), "the shortened answer differs: %.*s", (int)n, text);
    json_decref(back);
    free(text);
}

/* An engine on ":memory:" with the admin, a user "bob" (not admin) with a
 * token, and a revoked token of bob's. Tokens are NUL-terminated. */
typedef struct fuzz_engine {
    bd_engine *engine;
    char admin_token[128];
    char bob_token[128];
    char revoked_token[128];
} fuzz_engine;

static inline void fuzz_engine_open(fuzz_engine *f)
{
    bd_engine_opts o = {.db_path = ":memory:", .default_lease_seconds = 300, .reaper_interval = 0};
    bd_err err;
    bd_caller admin = {0};
    json_t *out = NULL, *body;
    int rc;

    memset(f, 0, sizeof *f);
    bd_err_clear(&err);
    rc = bd_engine_open(&o, &f->engine, &err);
    FUZZ_CHECK(rc == 0, "bd_engine_open: %s", err.message);
    snprintf(f->admin_token, sizeof f->admin_token, "%s", bd_engine_first_admin_token(f->engine));
    rc = bd_engine_authenticate(f->engine, f->admin_token, &admin, &err);
    FUZZ_CHECK(rc == 0, "admin token: %s", err.message);

    bd_request req = {.caller = &admin, .idem_key = NULL, .fingerprint = "setup"};
    body = json_pack("{s:s}", "name", "bob");
    rc = bd_engine_create_user(f->engine, &req, body, &out, &err);
    FUZZ_CHECK(rc == 0, "create bob: %s", err.message);
    json_decref(body);
    json_decref(out);
    for (int i = 0; i < 2; i++) {
        out = NULL;
        rc = bd_engine_create_token(f->engine, &req, "bob", &out, &err);
        FUZZ_CHECK(rc == 0, "bob's token: %s", err.message);
        snprintf(i ? f->revoked_token : f->bob_token, sizeof f->bob_token, "%s",
                 json_string_value(json_object_get(out, "token")));
        if (i) {
            json_t *gone = NULL;
            rc = bd_engine_revoke_token(f->engine, &req, json_integer_value(json_object_get(out, "token_id")), &gone,
                                        &err);
            FUZZ_CHECK(rc == 0, "revoke: %s", err.message);
            json_decref(gone);
        }
        json_decref(out);
    }
}

static inline void fuzz_engine_close(fuzz_engine *f)
{
    bd_engine_close(f->engine);
    memset(f, 0, sizeof *f);
}

/* Copies src[0..n) into a new NUL-terminated string, replacing each "$A",
 * "$B", "$R" with the admin, bob and revoked tokens and each "$S", "$T" with
 * the decimal study and trial ids given. A NUL byte ends the string (as in
 * a header or a URL that libmicrohttpd hands over). */
static inline char *fuzz_expand(const fuzz_engine *f, const char *src, size_t n, long long study, long long trial)
{
    size_t cap = n + 1, len = 0;
    char *out = malloc(cap);

    FUZZ_CHECK(out != NULL, "out of memory");
    for (size_t i = 0; i < n && src[i]; i++) {
        char num[32];
        const char *rep = NULL;
        if (src[i] == '$' && i + 1 < n) {
            switch (src[i + 1]) {
            case 'A':
                rep = f ? f->admin_token : "";
                break;
            case 'B':
                rep = f ? f->bob_token : "";
                break;
            case 'R':
                rep = f ? f->revoked_token : "";
                break;
            case 'S':
                snprintf(num, sizeof num, "%lld", study);
                rep = num;
                break;
            case 'T':
                snprintf(num, sizeof num, "%lld", trial);
                rep = num;
                break;
            default:
                break;
            }
        }
        size_t add = rep ? strlen(rep) : 1;
        if (len + add + 1 > cap) {
            cap = 2 * (len + add + 1);
            out = realloc(out, cap);
            FUZZ_CHECK(out != NULL, "out of memory");
        }
        if (rep) {
            memcpy(out + len, rep, add);
            i++;
        } else {
            out[len] = src[i];
        }
        len += add;
    }
    out[len] = '\0';
    return out;
}

#endif
