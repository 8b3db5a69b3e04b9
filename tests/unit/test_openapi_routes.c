/* api/openapi.yaml documents exactly the routes the router serves: the set
 * of (method, path) pairs under `paths:` equals the route table's. The file
 * is found from BD_SOURCE_DIR, else ${BD_FIXTURES}/../.., else the compile
 * definition BD_SOURCE_DIR_DEFAULT, else the working directory. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/router.h"

#define MAX_PAIRS 64

typedef struct pair {
    char method[16];
    char path[128];
} pair;

static FILE *open_spec(char *path, size_t cap)
{
    const char *src = getenv("BD_SOURCE_DIR"), *fixtures = getenv("BD_FIXTURES");

    if (src) {
        snprintf(path, cap, "%s/api/openapi.yaml", src);
    } else if (fixtures) {
        /* <src>/tests/fixtures -> <src>, textually: fixtures/ need not exist */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", fixtures);
        for (int up = 0; up < 2; up++) {
            char *slash;
            while (strlen(dir) > 1 && dir[strlen(dir) - 1] == '/')
                dir[strlen(dir) - 1] = '\0';
            slash = strrchr(dir, '/');
            if (slash)
                *slash = '\0';
        }
        snprintf(path, cap, "%s/api/openapi.yaml", dir[0] ? dir : ".");
    }
#ifdef BD_SOURCE_DIR_DEFAULT
    else
        snprintf(path, cap, "%s/api/openapi.yaml", BD_SOURCE_DIR_DEFAULT);
#else
    else
        snprintf(path, cap, "api/openapi.yaml");
#endif
    return fopen(path, "r");
}

static int indent_of(const char *line)
{
    int n = 0;
    while (line[n] == ' ')
        n++;
    return n;
}

/* Reads "key:" (optionally quoted) at the start of s into out; 0 if s is not a key line. */
static int key_of(const char *s, char *out, size_t cap)
{
    size_t n = strcspn(s, ":\n");

    if (s[n] != ':' || n == 0 || s[0] == '#' || s[0] == '-')
        return 0;
    if ((s[0] == '"' || s[0] == '\'') && n >= 2 && s[n - 1] == s[0]) {
        s++;
        n -= 2;
    }
    if (n >= cap)
        return 0;
    memcpy(out, s, n);
    out[n] = '\0';
    return 1;
}

static int is_http_method(const char *k)
{
    static const char *const methods[] = {"get", "post", "delete", "put", "patch", "head", "options", "trace"};
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        if (strcmp(k, methods[i]) == 0)
            return 1;
    }
    return 0;
}

/* Line scan: paths are the 2-space keys under the top-level `paths:`,
 * methods the 4-space keys below a path. */
static size_t spec_pairs(pair *out)
{
    char file[4096], line[1024], path[128] = "", key[128];
    FILE *f = open_spec(file, sizeof file);
    int in_paths = 0;
    size_t n = 0;

    cr_assert_not_null(f, "cannot open %s (set BD_SOURCE_DIR)", file);
    while (fgets(line, sizeof line, f)) {
        int ind = indent_of(line);

        if (line[ind] == '\n' || line[ind] == '\0' || line[ind] == '#')
            continue;
        if (ind == 0) {
            in_paths = strncmp(line, "paths:", 6) == 0;
            continue;
        }
        if (!in_paths || !key_of(line + ind, key, sizeof key))
            continue;
        if (ind == 2) {
            cr_assert_eq(key[0], '/', "path key '%s' does not start with /", key);
            strcpy(path, key);
        } else if (ind == 4 && is_http_method(key)) {
            cr_assert_lt(n, MAX_PAIRS);
            for (size_t i = 0; i <= strlen(key); i++)
                out[n].method[i] = (char)toupper((unsigned char)key[i]);
            strcpy(out[n].path, path);
            n++;
        }
    }
    fclose(f);
    return n;
}

static int has(const pair *set, size_t n, const char *method, const char *path)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(set[i].method, method) == 0 && strcmp(set[i].path, path) == 0)
            return 1;
    }
    return 0;
}

Test(openapi, documents_exactly_the_router_table)
{
    pair spec[MAX_PAIRS];
    size_t nspec = spec_pairs(spec), nroutes;
    const bd_route *routes = bd_routes(&nroutes);

    cr_assert_gt(nspec, 0, "no operations found under paths:");
    for (size_t i = 0; i < nroutes; i++) {
        const char *m = bd_http_method_name(routes[i].method);
        cr_expect(has(spec, nspec, m, routes[i].pattern), "%s %s is routed but missing from openapi.yaml", m,
                  routes[i].pattern);
    }
    for (size_t i = 0; i < nspec; i++) {
        int found = 0;
        for (size_t j = 0; j < nroutes && !found; j++)
            found = strcmp(spec[i].method, bd_http_method_name(routes[j].method)) == 0 &&
                    strcmp(spec[i].path, routes[j].pattern) == 0;
        cr_expect(found, "%s %s is documented but not routed", spec[i].method, spec[i].path);
    }
    cr_expect_eq(nspec, nroutes, "duplicate operations in openapi.yaml?");
    cr_expect(has(spec, nspec, "GET", "/healthz") && has(spec, nspec, "GET", "/metrics"));
}

Test(openapi, declares_bearer_security_and_idempotency_key)
{
    char file[4096], line[1024];
    FILE *f = open_spec(file, sizeof file);
    int bearer = 0, idem = 0, v31 = 0;

    cr_assert_not_null(f, "cannot open %s", file);
    while (fgets(line, sizeof line, f)) {
        bearer |= strstr(line, "scheme: bearer") != NULL;
        idem |= strstr(line, "name: Idempotency-Key") != NULL;
        v31 |= strncmp(line, "openapi: 3.1", 12) == 0;
    }
    fclose(f);
    cr_expect(v31, "not OpenAPI 3.1");
    cr_expect(bearer, "no bearer security scheme");
    cr_expect(idem, "no Idempotency-Key header parameter");
}
