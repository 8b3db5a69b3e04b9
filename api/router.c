/* router.c: pattern matching over a static route table (see router.h). */
#include "router.h"

#include <stdio.h>
#include <string.h>

/* Reads a path segment as an {id}: digits only, no leading zero, <= INT64_MAX. */
static int parse_id(const char *s, size_t len, int64_t *out)
{
    int64_t v = 0;

    if (len == 0 || len > 19 || s[0] == '0')
        return 0;
    for (size_t i = 0; i < len; i++) {
        int d = s[i] - '0';
        if (d < 0 || d > 9 || v > (INT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

/* Whether path fits pattern; fills params when it does. */
static int match_pattern(const char *pat, const char *path, bd_path_params *params)
{
    params->count = 0;
    while (*pat) {
        if (*pat == '{') {
            const char *close = strchr(pat, '}');
            size_t seg = strcspn(path, "/");
            int is_id = close - pat == 3 && strncmp(pat, "{id}", 4) == 0;
            int i = params->count;

            if (!close || seg == 0 || seg >= BD_PATH_PARAM_TEXT_MAX || i >= BD_PATH_PARAMS_MAX)
                return 0;
            params->v[i].num = 0;
            if (is_id && !parse_id(path, seg, &params->v[i].num))
                return 0;
            memcpy(params->v[i].text, path, seg);
            params->v[i].text[seg] = '\0';
            params->count++;
            pat = close + 1;
            path += seg;
        } else {
            if (*pat != *path)
                return 0;
            pat++;
            path++;
        }
    }
    return *path == '\0';
}

static void append_allow(char *allow, size_t cap, const char *method)
{
    size_t len = strlen(allow);

    if (strstr(allow, method))
        return;
    snprintf(allow + len, cap - len, "%s%s", len ? ", " : "", method);
}

int bd_router_match(const bd_route *table, size_t n, bd_http_req *req)
{
    bd_path_params params;

    req->route = NULL;
    req->pattern_id = -1;
    req->allow[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        const bd_route *r = &table[i];

        if (req->pattern_id >= 0) {
            if (strcmp(r->pattern, table[req->pattern_id].pattern) != 0)
                continue;
        } else {
            if (!match_pattern(r->pattern, req->path, &params))
                continue;
            req->pattern_id = (int)i; /* the first route with this pattern: any earlier one would have matched */
        }
        if (r->method == req->method) {
            req->route = r;
            req->params = params;
            req->allow[0] = '\0';
            return 0;
        }
        append_allow(req->allow, sizeof req->allow, bd_http_method_name(r->method));
    }
    return req->pattern_id >= 0 ? BD_EMETHOD : BD_ENOTFOUND;
}
