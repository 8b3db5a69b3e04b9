/* pg_redact.c: a database name as the daemon may log it (store.h
 * bd_store_redact_url): every value libpq would read as a secret (a
 * PQconninfoOption whose dispchar is "*": password, sslpassword) shown as
 * "***", everything else as given.
 *
 * libpq is the judge, not a copy of its grammar: a URL is masked where it
 * stands (the user info's password, and each query parameter whose name,
 * percent-decoded as libpq decodes it, is a secret: %70assword is
 * password), then PQconninfoParse reads the masked text; if any secret it
 * finds in the original still has its value there, the text shown is
 * rebuilt from libpq's own reading, keyword='value' pairs with every
 * secret masked. A string libpq cannot parse is no connection string
 * (storage opens it as a SQLite path) and is shown as it is, but a URL
 * keeps its lexical masking even then (libpq refuses one unknown
 * parameter, and the error is logged beside the URL). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libpq-fe.h>

#include "store.h"

/* Bounded appends to out (always NUL-terminated; a longer text is cut). */
typedef struct text_out {
    char *buf;
    size_t size, n;
} text_out;

static void put(text_out *t, const char *s, size_t len)
{
    for (size_t i = 0; i < len && t->n + 1 < t->size; i++)
        t->buf[t->n++] = s[i];
    t->buf[t->n] = '\0';
}

static void puts_(text_out *t, const char *s)
{
    put(t, s, strlen(s));
}

static int is_url(const char *db)
{
    return strncmp(db, "postgresql://", 13) == 0 || strncmp(db, "postgres://", 11) == 0;
}

/* Is name (len bytes, %XX-encoded as in a URL) a keyword libpq keeps
 * secret? Compared without case: a spelling libpq refuses is masked too. */
static int secret_name(const PQconninfoOption *all, const char *name, size_t len)
{
    char key[64];
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        int c = (unsigned char)name[i];
        if (c == '%' && i + 2 < len && isxdigit((unsigned char)name[i + 1]) &&
            isxdigit((unsigned char)name[i + 2])) {
            char hex[3] = {name[i + 1], name[i + 2], 0};
            c = (int)strtol(hex, NULL, 16);
            i += 2;
        }
        if (k + 1 >= sizeof key)
            return 0; /* longer than every keyword */
        key[k++] = (char)c;
    }
    key[k] = '\0';
    for (const PQconninfoOption *o = all; o && o->keyword; o++)
        if (o->dispchar && o->dispchar[0] == '*' && strcasecmp(o->keyword, key) == 0)
            return 1;
    return 0;
}

/* A postgresql:// URL with the user info's password and every secret query
 * parameter's value replaced by "***". libpq's user info ends at the first
 * @ before the first /; masking from the first : to the last @ covers it
 * (and "user:p@ss@host", which libpq refuses). */
static void mask_url(const PQconninfoOption *all, const char *db, text_out *t)
{
    const char *rest = strstr(db, "://") + 3, *slash = rest + strcspn(rest, "/");
    const char *at = NULL, *colon, *query, *p;
    for (p = rest; p < slash; p++)
        if (*p == '@')
            at = p;
    colon = at ? memchr(rest, ':', (size_t)(at - rest)) : NULL;
    if (colon) {
        put(t, db, (size_t)(colon + 1 - db));
        puts_(t, "***");
        p = at;
    } else {
        p = db;
    }
    query = strchr(at ? at + 1 : rest, '?');
    if (!query) {
        puts_(t, p);
        return;
    }
    put(t, p, (size_t)(query + 1 - p));
    for (p = query + 1;;) {
        size_t len = strcspn(p, "&"), name_len = strcspn(p, "=&");
        if (p[name_len] == '=' && secret_name(all, p, name_len)) {
            put(t, p, name_len + 1);
            puts_(t, "***");
        } else {
            put(t, p, len);
        }
        if (!p[len])
            break;
        put(t, "&", 1);
        p += len + 1;
    }
}

/* Does the masked text still give any secret of the original its value? */
static int leaks(const PQconninfoOption *orig, const char *masked)
{
    PQconninfoOption *m = PQconninfoParse(masked, NULL);
    int leak = 0;
    for (const PQconninfoOption *o = orig; o->keyword && !leak; o++) {
        if (!o->val || !o->dispchar || o->dispchar[0] != '*')
            continue;
        if (!m) {
            leak = 1;
            break;
        }
        for (const PQconninfoOption *k = m; k->keyword; k++)
            if (strcmp(k->keyword, o->keyword) == 0 && k->val && strcmp(k->val, "***") != 0)
                leak = 1;
    }
    PQconninfoFree(m);
    return leak;
}

/* libpq's reading of db as keyword='value' pairs, secrets masked. */
static void rebuild(const PQconninfoOption *opts, text_out *t)
{
    t->n = 0;
    t->buf[0] = '\0';
    for (const PQconninfoOption *o = opts; o->keyword; o++) {
        if (!o->val)
            continue;
        if (t->n)
            put(t, " ", 1);
        puts_(t, o->keyword);
        puts_(t, "='");
        if (o->dispchar && o->dispchar[0] == '*') {
            puts_(t, "***");
        } else {
            for (const char *c = o->val; *c; c++) {
                if (*c == '\'' || *c == '\\')
                    put(t, "\\", 1);
                put(t, c, 1);
            }
        }
        put(t, "'", 1);
    }
}

void bd_store_redact_url(const char *db, char *out, size_t size)
{
    text_out t = {out, size, 0};
    if (size == 0)
        return;
    out[0] = '\0';
    PQconninfoOption *opts = PQconninfoParse(db, NULL);
    if (is_url(db)) {
        /* Every keyword with its dispchar, from the parse of an empty string. */
        PQconninfoOption *all = opts ? NULL : PQconninfoParse("", NULL);
        mask_url(opts ? opts : all, db, &t);
        PQconninfoFree(all);
    } else {
        puts_(&t, db);
    }
    if (opts && leaks(opts, out))
        rebuild(opts, &t);
    PQconninfoFree(opts);
}
