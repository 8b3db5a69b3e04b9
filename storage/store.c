/* store.c: the public calls of store.h, each forwarded to the backend the
 * store was opened with (the lists of store_ops.h make the forwarders), the
 * transactions to its group commit (group_commit.h). bd_store_open chooses it: a postgresql:// or
 * postgres:// URL opens PostgreSQL, anything else is a SQLite path. Nothing
 * here knows SQL. */
#include <string.h>

#include "store_ops.h"

int bd_store_is_pg_url(const char *name)
{
    return name && (strncmp(name, "postgresql://", 13) == 0 || strncmp(name, "postgres://", 11) == 0);
}

int bd_store_open(const char *path, const bd_store_opts *opts, bd_store **out, bd_err *err)
{
    if (!path || !*path)
        return bd_err_set(err, BD_EINVAL, "db", "no database path");
    if (bd_store_is_pg_url(path))
        return bd_pg_open(path, opts, out, err);
    return bd_sqlite_open(path, opts, out, err);
}

void bd_store_close(bd_store *s)
{
    if (s)
        s->ops->close(s);
}

int bd_store_schema_version(bd_store *s)
{
    /* Without a store: the version this build writes (both backends agree). */
    return s ? s->ops->schema_version(s) : BD_STORE_SCHEMA_LATEST;
}

int bd_store_begin(bd_store *s, bd_err *err)
{
    return bd_gc_begin(s->gc, err);
}

int bd_store_commit(bd_store *s, bd_err *err)
{
    return bd_gc_commit(s->gc, err);
}

void bd_store_rollback(bd_store *s)
{
    if (s)
        bd_gc_rollback(s->gc);
}

int bd_store_release(bd_store *s, uint64_t *ticket, bd_err *err)
{
    return bd_gc_release(s->gc, ticket, err);
}

int bd_store_wait(bd_store *s, uint64_t ticket, bd_err *err)
{
    return bd_gc_wait(s->gc, ticket, err);
}

uint64_t bd_store_failures(bd_store *s)
{
    return bd_gc_failures(s->gc);
}

int bd_store_writable(bd_store *s)
{
    return bd_gc_writable(s->gc);
}

void bd_store_recovered(bd_store *s, uint64_t failures)
{
    bd_gc_recovered(s->gc, failures);
}

uint64_t bd_store_current_ticket(bd_store *s)
{
    return bd_gc_current_ticket(s->gc);
}

void bd_store_fail_next_commit(bd_store *s)
{
    bd_gc_fail_next_commit(s->gc);
}

/* The calls of store_ops.h's lists, each to the backend's slot. */
#define FORWARD(name, params, args)                                                                                    \
    int bd_store_##name params                                                                                         \
    {                                                                                                                  \
        return s->ops->name args;                                                                                      \
    }
BD_STORE_CALLS(FORWARD)
#undef FORWARD

/* ---- cluster mode ---- */

static int no_cluster(bd_store *s, bd_err *err)
{
    return bd_err_set(err, BD_EINVAL, NULL, "storage: the %s store has no cluster mode", s->ops->name);
}

#define FORWARD_CLUSTER(name, params, args)                                                                            \
    int bd_store_##name params                                                                                         \
    {                                                                                                                  \
        return s->ops->name ? s->ops->name args : no_cluster(s, err);                                                  \
    }
BD_STORE_CLUSTER_CALLS(FORWARD_CLUSTER)
#undef FORWARD_CLUSTER

#define FORWARD_CLUSTER_VOID(name, params, args)                                                                       \
    void bd_store_##name params                                                                                        \
    {                                                                                                                  \
        if (s->ops->name)                                                                                              \
            s->ops->name args;                                                                                         \
    }
BD_STORE_CLUSTER_VOID_CALLS(FORWARD_CLUSTER_VOID)
#undef FORWARD_CLUSTER_VOID
