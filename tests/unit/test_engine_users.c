/* The first admin's token from an operator's file (--admin-token-file): used
 * verbatim as the admin's bearer token, read only on the first start, no
 * <db>.admin-token written; and every file that must not be trusted (writable
 * by others, not a regular file, too long, a NUL byte, a wrong id, missing)
 * refused with nothing committed, so a corrected start still works. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/engine.h"

#define TOKEN_A "bdt_1_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"
#define TOKEN_B "bdt_1_a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/bd-unit-admin-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(engine_users, .init = make_dir, .fini = remove_dir);

static const char *in_dir(const char *name)
{
    static char paths[8][128];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 128, "%s/%s", dir, name);
    return p;
}

static const char *write_file(const char *name, const void *data, size_t n, mode_t mode)
{
    const char *path = in_dir(name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, data, n), (ssize_t)n);
    cr_assert_eq(fchmod(fd, mode), 0);
    close(fd);
    return path;
}

static int open_with(const char *db, const char *token_file, bd_engine **e, bd_err *err)
{
    bd_engine_opts o = {.db_path = db, .default_lease_seconds = 60, .admin_token_file = token_file};
    *e = NULL;
    return bd_engine_open(&o, e, err);
}

static int authenticates_as_admin(bd_engine *e, const char *token)
{
    bd_caller c;
    bd_err err;
    return bd_engine_authenticate(e, token, &c, &err) == 0 && c.is_admin && strcmp(c.name, "admin") == 0;
}

Test(engine_users, supplied_token_is_the_admins_and_read_only_on_the_first_start)
{
    const char *db = in_dir("a.db");
    const char *file_a = write_file("token-a", TOKEN_A "\r\n", strlen(TOKEN_A) + 2, 0600);
    const char *file_b = write_file("token-b", TOKEN_B "\n", strlen(TOKEN_B) + 1, 0400);
    bd_engine *e;
    bd_err err = {0};

    cr_assert_eq(open_with(db, file_a, &e, &err), 0, "%s", err.message);
    cr_assert(authenticates_as_admin(e, TOKEN_A), "the token from the file does not authenticate the admin");
    cr_assert_str_eq(bd_engine_first_admin_token(e), TOKEN_A);
    bd_engine_close(e);
    cr_assert_eq(access(in_dir("a.db.admin-token"), F_OK), -1, "a.db.admin-token was written");

    /* Later starts do not read the file: another token there changes nothing. */
    cr_assert_eq(open_with(db, file_b, &e, &err), 0, "%s", err.message);
    cr_assert_null(bd_engine_first_admin_token(e));
    cr_assert(authenticates_as_admin(e, TOKEN_A));
    cr_assert_not(authenticates_as_admin(e, TOKEN_B), "a later start's file replaced the admin's token");
    bd_engine_close(e);
    cr_assert_eq(open_with(db, in_dir("no-such-file"), &e, &err), 0, "%s", err.message);
    bd_engine_close(e);
}

Test(engine_users, readable_by_others_and_symbolic_links_are_accepted)
{
    const char *file = write_file("token", TOKEN_A, strlen(TOKEN_A), 0444); /* Docker's secret mode */
    bd_engine *e;
    bd_err err = {0};

    cr_assert_eq(symlink(file, in_dir("link")), 0);
    cr_assert_eq(open_with(in_dir("b.db"), in_dir("link"), &e, &err), 0, "%s", err.message);
    cr_assert(authenticates_as_admin(e, TOKEN_A));
    bd_engine_close(e);
}

static void expect_refused(const char *db, const char *file, const char *why)
{
    bd_engine *e;
    bd_err err = {0};
    int rc = open_with(db, file, &e, &err);

    cr_expect_lt(rc, 0, "a token file that %s was accepted", why);
    if (rc == 0) {
        bd_engine_close(e);
        return;
    }
    cr_expect_null(e);
    cr_expect(strstr(err.message, "admin token file"), "%s: %s", why, err.message);
    cr_expect_null(strstr(err.message, "0f1e2d3c4b"), "the message quotes the secret: %s", err.message);
}

Test(engine_users, untrusted_files_refused_and_nothing_committed)
{
    const char *db = in_dir("c.db");
    char longer[200], nul[sizeof TOKEN_A + 2];
    bd_engine *e;
    bd_err err = {0};

    memset(longer, 'a', sizeof longer);
    memcpy(nul, TOKEN_A, sizeof TOKEN_A);
    nul[sizeof TOKEN_A - 1] = '\0';
    nul[sizeof TOKEN_A] = 'x';
    cr_assert_eq(mkfifo(in_dir("fifo"), 0600), 0);
    cr_assert_eq(mkdir(in_dir("subdir"), 0700), 0);

    expect_refused(db, write_file("g-w", TOKEN_A, strlen(TOKEN_A), 0620), "is group-writable");
    expect_refused(db, write_file("o-w", TOKEN_A, strlen(TOKEN_A), 0602), "is world-writable");
    expect_refused(db, in_dir("fifo"), "is a FIFO");
    expect_refused(db, in_dir("subdir"), "is a directory");
    expect_refused(db, "/dev/null", "is a device");
    expect_refused(db, in_dir("missing"), "does not exist");
    expect_refused(db, write_file("empty", "", 0, 0600), "is empty");
    expect_refused(db, write_file("long", longer, sizeof longer, 0600), "is longer than a token");
    expect_refused(db, write_file("nul", nul, sizeof nul, 0600), "holds a NUL byte");
    expect_refused(db, write_file("zeros", "bdt_1_" "0000000000000000000000000000000000000000000000000000000000000000",
                                  70, 0600),
                   "holds a placeholder secret");
    const char *id2 = write_file("id2", "bdt_2_0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0", 70, 0600);
    cr_assert_lt(open_with(db, id2, &e, &err), 0);
    cr_expect(strstr(err.message, "first token is 1"), "%s", err.message);

    /* None of the refused starts created the admin: the right file still works. */
    cr_assert_eq(open_with(db, write_file("ok", TOKEN_A, strlen(TOKEN_A), 0600), &e, &err), 0, "%s", err.message);
    cr_assert(authenticates_as_admin(e, TOKEN_A));
    bd_engine_close(e);
}
