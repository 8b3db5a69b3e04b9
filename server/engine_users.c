/* engine_users.c: requests about users: creating users and tokens,
 * revoking tokens, /v1/me, quotas (set by an admin, checked when a study
 * is created), and the first admin. The caches that authenticate a request
 * are engine_auth.c's. */
#include "engine.h"
#include "engine_internal.h"
#include "json_util.h"
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_USER_NAME 63

static int mint_token(bd_engine *e, int64_t user_id, char *token, size_t n, int64_t *token_id, bd_err *err)
{
    char secret[BD_TOKEN_SECRET_HEX + 1];
    uint8_t hash[BD_TOKEN_HASH_BYTES];
    bd_auth_new_secret(secret, hash);
    int rc = bd_store_token_add(bd_engine_store(e), user_id, hash, bd_now(), token_id, err);
    if (!rc)
        bd_auth_format_token(*token_id, secret, token, n);
    memset(secret, 0, sizeof secret);
    return rc;
}

/* Writes token to path, never through a link planted there: a new file
 * (O_EXCL | O_NOFOLLOW, 0600) under a random name in the same directory,
 * synced, renamed over path (rename replaces a link or a stale token file
 * left by a start that crashed before its commit, and never follows it),
 * then the directory synced so the name is durable before the commit. */
static int write_secret_file(const char *path, const char *token, bd_err *err)
{
    size_t cap = strlen(path) + 32, len = strlen(token);
    char *tmp = bd_xmalloc(cap), *dir = bd_xstrdup(path), *slash = strrchr(dir, '/');
    char random_hex[BD_TOKEN_SECRET_HEX + 1];
    uint8_t unused[BD_TOKEN_HASH_BYTES];
    int rc = 0, fd, dfd;

    bd_auth_new_secret(random_hex, unused);
    snprintf(tmp, cap, "%s.%.16s.tmp", path, random_hex);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "cannot create %s for the admin token%s: %s", tmp,
                        errno == EEXIST ? " (it already exists; refusing to reuse it)" : "", strerror(errno));
        goto out;
    }
    /* The umask may have narrowed O_CREAT's mode; make it exactly 0600. */
    int ok = fchmod(fd, 0600) == 0 && write(fd, token, len) == (ssize_t)len && write(fd, "\n", 1) == 1 &&
             fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp);
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "cannot write the admin token to %s: %s", path, strerror(saved));
        goto out;
    }
    if (slash)
        slash[slash == dir ? 1 : 0] = '\0';
    dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || (fsync(dfd) != 0 && errno != EINVAL))
        rc = bd_err_set(err, BD_EINTERNAL, NULL, "cannot sync the directory of %s: %s", path, strerror(errno));
    if (dfd >= 0)
        close(dfd);
out:
    free(dir);
    free(tmp);
    return rc;
}

/* Reads the token an operator supplied for the first admin (a Docker or
 * systemd secret) into token. The path may be a symbolic link (Kubernetes
 * and systemd credentials are), but what it names must be a regular file
 * (not a FIFO that could block the start, nor a device) that no one but its
 * owner may write: whoever can write it chooses the admin's secret. An owner
 * other than root or the daemon's user, and readable by others, are only
 * warned about (compose keeps a secret's host owner; Docker mounts secrets
 * 0444). The token is never put into a message. */
/* The directory holding the admin token file: whoever may create files in
 * it may have put the file there, or may swap it. A world-writable
 * directory is refused unless it is sticky (like /tmp, where only a file's
 * owner may remove or rename it) and the file belongs to root or to this
 * daemon's user (issue 20: a file in such a directory was read silently). */
static int check_token_directory(const char *path, const struct stat *file, bd_err *err)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    struct stat st;
    size_t n = slash ? (size_t)(slash - path) : 0;

    if (n >= sizeof dir)
        return bd_err_set(err, BD_EINVAL, NULL, "the admin token file's directory name is too long");
    if (slash) {
        memcpy(dir, path, n ? n : 1); /* "/x" lives in "/" */
        dir[n ? n : 1] = '\0';
    } else {
        strcpy(dir, ".");
    }
    if (stat(dir, &st) != 0)
        return bd_err_set(err, BD_EINVAL, NULL, "cannot stat the directory %s of the admin token file: %s", dir,
                          strerror(errno));
    if (!(st.st_mode & S_IWOTH))
        return 0;
    if ((st.st_mode & S_ISVTX) && (file->st_uid == 0 || file->st_uid == geteuid()))
        return 0;
    return bd_err_set(err, BD_EINVAL, NULL,
                      "the admin token file %s is in %s, a directory anyone may write to%s; move it to a "
                      "directory only its owner may write",
                      path, dir, (st.st_mode & S_ISVTX) ? " (sticky, but the file belongs to another user)" : "");
}

static int read_supplied_token(const char *path, char token[BD_TOKEN_MAX_LEN], int64_t *id,
                               uint8_t hash[BD_TOKEN_HASH_BYTES], bd_err *err)
{
    char buf[BD_TOKEN_MAX_LEN + 1];
    size_t len = 0;
    struct stat st;
    bd_err why;
    int rc = 0, fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

    if (fd < 0)
        return bd_err_set(err, BD_EINVAL, NULL, "cannot open the admin token file %s: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "cannot stat the admin token file %s: %s", path, strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "the admin token file %s is not a regular file", path);
        goto out;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        rc = bd_err_set(err, BD_EINVAL, NULL,
                        "the admin token file %s may be written by group or others (mode %04o); chmod go-w it",
                        path, (unsigned)(st.st_mode & 07777));
        goto out;
    }
    if ((rc = check_token_directory(path, &st, err)))
        goto out;
    /* Its owner may write it too: one who is neither root nor the daemon's
     * user chose the admin's secret. Only warned about, since a compose
     * secret keeps the owner it has on the host. */
    if (st.st_uid != 0 && st.st_uid != geteuid())
        bd_log(BD_LOG_WARN,
               "the admin token file %s belongs to uid %u, neither root nor this daemon's uid %u: that user "
               "chose the admin's token; chown it unless that is intended",
               path, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & (S_IRGRP | S_IROTH))
        bd_log(BD_LOG_WARN,
               "the admin token file %s may be read by group or others (mode %04o); fine for a container's "
               "secret, elsewhere chmod 600 it",
               path, (unsigned)(st.st_mode & 07777));
    /* One byte more than a token may take, so a longer file is seen as such. */
    while (len < sizeof buf) {
        ssize_t n = read(fd, buf + len, sizeof buf - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = bd_err_set(err, BD_EINVAL, NULL, "cannot read the admin token file %s: %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
        len--;
    if (len >= BD_TOKEN_MAX_LEN) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "the admin token file %s is longer than a token", path);
        goto out;
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "the admin token file %s holds a NUL byte", path);
        goto out;
    }
    if (bd_auth_check_supplied(buf, id, hash, &why)) {
        rc = bd_err_set(err, BD_EINVAL, NULL, "the admin token file %s %s", path, why.message);
        goto out;
    }
    memcpy(token, buf, len + 1);
out:
    memset(buf, 0, sizeof buf);
    close(fd);
    return rc;
}

int bd_engine_bootstrap_admin(bd_engine *e, const char *token_path, const char *supplied_path, char **first_token,
                              bd_err *err)
{
    int64_t users, user_id, token_id, supplied_id = 0;
    char token[BD_TOKEN_MAX_LEN];
    uint8_t hash[BD_TOKEN_HASH_BYTES];
    int rc = bd_store_begin(bd_engine_store(e), err);
    if (rc)
        return rc;
    if ((rc = bd_store_user_count(bd_engine_store(e), &users, err)) || users > 0)
        goto out;
    if ((rc = bd_store_user_create(bd_engine_store(e), "admin", 1, bd_now(), &user_id, err)))
        goto out;
    if (supplied_path) {
        /* The store numbers tokens itself (1 on an empty database, also after
         * a start that crashed before its commit), so the id the operator
         * wrote must be the one it gives: the token then works verbatim. */
        if ((rc = read_supplied_token(supplied_path, token, &supplied_id, hash, err)) ||
            (rc = bd_store_token_add(bd_engine_store(e), user_id, hash, bd_now(), &token_id, err)))
            goto out;
        if (token_id != supplied_id) {
            rc = bd_err_set(err, BD_EINVAL, NULL,
                            "the admin token file %s names token id %lld, but this database's first token is %lld: "
                            "write bdt_%lld_<secret>",
                            supplied_path, (long long)supplied_id, (long long)token_id, (long long)token_id);
            goto out;
        }
    } else {
        if ((rc = mint_token(e, user_id, token, sizeof token, &token_id, err)))
            goto out;
        /* The file is written before the commit: a crash in between leaves a
         * token that never worked, and the next start replaces it with a new one.
         * The other order could commit an admin whose token nobody ever saw. */
        if (token_path && (rc = write_secret_file(token_path, token, err)))
            goto out;
    }
    *first_token = bd_xstrdup(token);
out:
    memset(token, 0, sizeof token);
    if (rc || users > 0) {
        bd_store_rollback(bd_engine_store(e));
        return rc;
    }
    return bd_store_commit(bd_engine_store(e), err);
}

static int valid_user_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > MAX_USER_NAME)
        return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
            return 0;
    return 1;
}

static json_t *user_json(const bd_user *u)
{
    return json_pack("{s:I, s:s, s:b, s:f}", "id", (json_int_t)u->id, "name", u->name, "admin", u->is_admin,
                     "created_at", u->created_at);
}

int bd_engine_create_user(bd_engine *e, const bd_request *req, const json_t *body, json_t **out, bd_err *err)
{
    bd_engine_recover_if_needed(e);
    const json_t *name = json_object_get(body, "name"), *admin = json_object_get(body, "admin");
    bd_user u = {0};
    int rc;
    if (!req->caller->is_admin)
        return bd_err_set(err, BD_EFORBIDDEN, NULL, "only an admin may create users");
    static const char *const known[] = {"name", "admin", NULL};
    if ((rc = bd_json_reject_unknown(body, "", known, err)))
        return rc;
    if (!json_is_string(name) || !valid_user_name(json_string_value(name)))
        return bd_err_set(err, BD_EINVAL, "name", "must be 1-%d characters of letters, digits, '_', '-', '.'",
                          MAX_USER_NAME);
    if (admin && !json_is_boolean(admin))
        return bd_err_set(err, BD_EINVAL, "admin", "must be true or false");
    if ((rc = bd_engine_txn_begin(e, req, out, err)))
        return rc > 0 ? 0 : rc;
    u.is_admin = admin && json_is_true(admin);
    u.created_at = bd_now();
    snprintf(u.name, sizeof u.name, "%s", json_string_value(name));
    rc = bd_store_user_create(bd_engine_store(e), u.name, u.is_admin, u.created_at, &u.id, err);
    if (rc == BD_ECONFLICT)
        bd_err_set(err, rc, "name", "a user named \"%s\" already exists", u.name);
    json_t *answer = rc ? NULL : user_json(&u);
    if ((rc = bd_engine_txn_end(e, req, rc, answer, err))) {
        json_decref(answer);
        return rc;
    }
    *out = answer;
    return 0;
}

int bd_engine_create_token(bd_engine *e, const bd_request *req, const char *user_name, json_t **out, bd_err *err)
{
    bd_engine_recover_if_needed(e);
    bd_user u;
    int64_t token_id;
    char token[BD_TOKEN_MAX_LEN];
    int rc = bd_store_user_by_name(bd_engine_store(e), user_name, &u, err);
    if (rc == BD_ENOTFOUND || (!rc && !req->caller->is_admin && u.id != req->caller->user_id))
        return bd_err_set(err, BD_ENOTFOUND, NULL, "no user named \"%s\"", user_name);
    if (rc)
        return rc;
    /* The token itself is never stored, not even as an idempotent answer, so a
     * retry with the same key cannot be shown the token again: it gets 409
     * naming the token it minted (revoke that one and mint anew). It still
     * does not act twice. */
    json_t *seen = NULL;
    if ((rc = bd_engine_txn_begin(e, req, &seen, err)) == 1) {
        rc = bd_err_set(err, BD_ECONFLICT, "Idempotency-Key",
                        "this key already minted token %lld; a token is shown only once: revoke it and mint another",
                        (long long)json_integer_value(json_object_get(seen, "token_id")));
        json_decref(seen);
        return rc;
    }
    if (rc)
        return rc;
    json_t *remembered = NULL;
    if (!(rc = mint_token(e, u.id, token, sizeof token, &token_id, err)))
        remembered = json_pack("{s:I, s:s}", "token_id", (json_int_t)token_id, "user", u.name);
    rc = bd_engine_txn_end(e, req, rc, remembered, err);
    json_decref(remembered);
    if (rc)
        return rc;
    *out = json_pack("{s:s, s:I, s:s}", "token", token, "token_id", (json_int_t)token_id, "user", u.name);
    memset(token, 0, sizeof token);
    return 0;
}

int bd_engine_revoke_token(bd_engine *e, const bd_request *req, int64_t token_id, json_t **out, bd_err *err)
{
    bd_engine_recover_if_needed(e);
    uint8_t hash[BD_TOKEN_HASH_BYTES];
    int64_t owner;
    int rc = bd_store_token_get(bd_engine_store(e), token_id, hash, &owner, err);
    if (rc == BD_ENOTFOUND || (!rc && !req->caller->is_admin && owner != req->caller->user_id))
        return bd_err_set(err, BD_ENOTFOUND, NULL, "no token %lld", (long long)token_id);
    if (rc)
        return rc;
    if ((rc = bd_engine_txn_begin(e, req, out, err)))
        return rc > 0 ? 0 : rc;
    json_t *answer = json_pack("{s:b, s:I}", "revoked", 1, "token_id", (json_int_t)token_id);
    rc = bd_store_token_revoke(bd_engine_store(e), token_id, err);
    if ((rc = bd_engine_txn_end(e, req, rc, answer, err))) {
        json_decref(answer);
        return rc;
    }
    bd_engine_token_revoked(e, token_id);
    *out = answer;
    return 0;
}

/* ------------------------------------------------------------------ quotas */

static void effective_limits(bd_engine *e, const bd_user *u, int64_t *studies, int64_t *bytes)
{
    *studies = u->max_studies >= 0 ? u->max_studies : bd_engine_default_max_studies(e);
    *bytes = u->max_definition_bytes >= 0 ? u->max_definition_bytes : bd_engine_default_max_definition_bytes(e);
}

static json_t *limits_json(bd_engine *e, const bd_user *u)
{
    int64_t studies, bytes;
    effective_limits(e, u, &studies, &bytes);
    return json_pack("{s:I, s:I, s:i}", "studies", (json_int_t)studies, "definition_bytes", (json_int_t)bytes,
                     "slow_requests", bd_engine_user_slots(e)->max_per_user);
}

int bd_engine_check_quota(bd_engine *e, int64_t user_id, int new_studies, size_t definition_bytes, bd_err *err)
{
    bd_user u;
    int64_t max_studies, max_bytes, studies, bytes;
    int rc = bd_engine_user_get(e, user_id, &u, err);
    if (!rc)
        rc = bd_store_user_usage(bd_engine_store(e), user_id, &studies, &bytes, err);
    if (rc)
        return rc;
    effective_limits(e, &u, &max_studies, &max_bytes);
    if (new_studies && studies + new_studies > max_studies)
        return bd_err_set(err, BD_EQUOTA, "limits.studies",
                          "you have %lld live studies, the most your quota allows (%lld); delete one or ask an "
                          "admin to raise it",
                          (long long)studies, (long long)max_studies);
    if ((uint64_t)bytes + definition_bytes > (uint64_t)max_bytes)
        return bd_err_set(err, BD_EQUOTA, "limits.definition_bytes",
                          "these %zu bytes of definition and your studies' (%lld bytes) pass your quota of %lld "
                          "bytes",
                          definition_bytes, (long long)bytes, (long long)max_bytes);
    return 0;
}

int bd_engine_me(bd_engine *e, const bd_caller *who, json_t **out, bd_err *err)
{
    bd_user u;
    int64_t studies, bytes;
    int rc = bd_engine_user_get(e, who->user_id, &u, err);
    if (!rc)
        rc = bd_store_user_usage(bd_engine_store(e), who->user_id, &studies, &bytes, err);
    if (rc)
        return rc;
    *out = user_json(&u);
    json_object_set_new(*out, "limits", limits_json(e, &u));
    json_object_set_new(*out, "usage",
                        json_pack("{s:I, s:I, s:i}", "studies", (json_int_t)studies, "definition_bytes",
                                  (json_int_t)bytes, "slow_requests",
                                  bd_user_slots_count(bd_engine_user_slots(e), who->user_id)));
    return 0;
}

/* A quota from a PATCH body: absent keeps *v, null is -1 (the default). */
static int limit_member(const json_t *limits, const char *key, int64_t *v, bd_err *err)
{
    const json_t *j = json_object_get(limits, key);
    char field[64];
    if (!j)
        return 0;
    if (json_is_null(j)) {
        *v = -1;
        return 0;
    }
    snprintf(field, sizeof field, "limits.%s", key);
    if (!json_is_integer(j) || json_integer_value(j) < 0)
        return bd_err_set(err, BD_EINVAL, field, "must be a whole number >= 0, or null for the daemon's default");
    *v = json_integer_value(j);
    return 0;
}

int bd_engine_set_user_limits(bd_engine *e, const bd_request *req, const char *user_name, const json_t *body,
                              json_t **out, bd_err *err)
{
    bd_engine_recover_if_needed(e);
    static const char *const known[] = {"limits", NULL};
    static const char *const known_limits[] = {"studies", "definition_bytes", NULL};
    const json_t *limits = json_object_get(body, "limits");
    bd_user u;
    int rc;
    if (!req->caller->is_admin)
        return bd_err_set(err, BD_EFORBIDDEN, NULL, "only an admin may set a user's limits");
    if ((rc = bd_json_reject_unknown(body, "", known, err)))
        return rc;
    if (!json_is_object(limits))
        return bd_err_set(err, BD_EINVAL, "limits", "must be an object of studies and definition_bytes");
    if ((rc = bd_json_reject_unknown(limits, "limits", known_limits, err)))
        return rc;
    if ((rc = bd_store_user_by_name(bd_engine_store(e), user_name, &u, err)))
        return rc == BD_ENOTFOUND ? bd_err_set(err, BD_ENOTFOUND, NULL, "no user named \"%s\"", user_name) : rc;
    if ((rc = limit_member(limits, "studies", &u.max_studies, err)) ||
        (rc = limit_member(limits, "definition_bytes", &u.max_definition_bytes, err)))
        return rc;
    if ((rc = bd_engine_txn_begin(e, req, out, err)))
        return rc > 0 ? 0 : rc;
    rc = bd_store_user_set_limits(bd_engine_store(e), u.id, u.max_studies, u.max_definition_bytes, err);
    json_t *answer = NULL;
    if (!rc) {
        answer = user_json(&u);
        json_object_set_new(answer, "limits", limits_json(e, &u));
    }
    if ((rc = bd_engine_txn_end(e, req, rc, answer, err))) {
        json_decref(answer);
        return rc;
    }
    bd_engine_user_changed(e, u.id);
    *out = answer;
    return 0;
}
