/* test_client.c: the C client's parts that need no daemon (clients/c): query
 * escaping, Idempotency-Keys, error text, and every argument check, which
 * must refuse bad input before anything is sent (the client here points at a
 * closed port with no retries, so a check that let a call through would show
 * up as a network error instead of BD_CLIENT_EINVAL). The calls against a
 * real daemon are in tests/integration/test_c_client.py. */
#include <criterion/criterion.h>

#include <arpa/inet.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client_internal.h"

/* A port on 127.0.0.1 that nothing listens on (bound, then closed). */
static int closed_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert(fd >= 0);
    cr_assert(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
    cr_assert(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static bd_client *offline_client(void)
{
    char url[64];
    bd_client *c = NULL;
    bd_client_err err;
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", closed_port());
    cr_assert_eq(bd_client_new(url, "bdt_test", &c, &err), 0, "%s", err.message);
    cr_assert_eq(bd_client_set_retries(c, 0, 0, 0), 0);
    cr_assert_eq(bd_client_set_timeout(c, 2000), 0);
    return c;
}

static void assert_invalid(int rc, const bd_client_err *err, const char *field)
{
    cr_assert_eq(rc, BD_CLIENT_EINVAL, "rc %d (%s: %s), expected EINVAL on %s", rc, err->code, err->message, field);
    cr_assert_eq(err->rc, BD_CLIENT_EINVAL);
    cr_assert_eq(err->status, 0);
    cr_assert_str_eq(err->code, "client_invalid");
    cr_assert_str_eq(err->field, field);
    cr_assert(err->message[0]);
}

Test(client, escape_keeps_unreserved_and_encodes_the_rest)
{
    char *s = bd_client_escape("a-Z_0.~ b&c=d/\xc3\xa9");
    cr_assert_str_eq(s, "a-Z_0.~%20b%26c%3Dd%2F%C3%A9");
    free(s);
    s = bd_client_escape("");
    cr_assert_str_eq(s, "");
    free(s);
}

Test(client, idempotency_keys_are_128_bit_hex_and_differ)
{
    char a[33], b[33];
    cr_assert_eq(bdc_idempotency_key(a), 0);
    cr_assert_eq(bdc_idempotency_key(b), 0);
    cr_assert_eq(strlen(a), 32);
    cr_assert_eq(strspn(a, "0123456789abcdef"), 32);
    cr_assert_str_neq(a, b);
}

Test(client, new_refuses_bad_url_and_token)
{
    bd_client *c = (bd_client *)1;
    bd_client_err err;
    assert_invalid(bd_client_new("ftp://127.0.0.1", NULL, &c, &err), &err, "url");
    cr_assert_null(c);
    assert_invalid(bd_client_new("127.0.0.1:8080", NULL, &c, &err), &err, "url");
    assert_invalid(bd_client_new("http://127.0.0.1\r\nX: y", NULL, &c, &err), &err, "url");
    assert_invalid(bd_client_new("http://127.0.0.1", "bdt_x\r\nX-Evil: 1", &c, &err), &err, "token");
    assert_invalid(bd_client_new("http://127.0.0.1", "", &c, &err), &err, "token");
    cr_assert_eq(bd_client_new("https://example.invalid/prefix/", NULL, &c, &err), 0);
    cr_assert_str_eq(c->base, "https://example.invalid/prefix");
    cr_assert_null(c->auth);
    bd_client_free(c);
}

Test(client, settings_are_bounded)
{
    bd_client *c = offline_client();
    cr_assert_eq(bd_client_set_retries(c, 101, 1, 1), BD_CLIENT_EINVAL);
    cr_assert_eq(bd_client_set_retries(c, -1, 1, 1), BD_CLIENT_EINVAL);
    cr_assert_eq(bd_client_set_retries(c, 3, 600001, 1), BD_CLIENT_EINVAL);
    cr_assert_eq(bd_client_set_timeout(c, 0), BD_CLIENT_EINVAL);
    cr_assert_eq(bd_client_set_max_response(c, 1023), BD_CLIENT_EINVAL);
    cr_assert_eq(bd_client_set_max_response(c, ((int64_t)1 << 40) + 1), BD_CLIENT_EINVAL);
    cr_assert_eq(bd_client_set_max_response(c, 4096), 0);
    cr_assert_eq(c->max_response, 4096);
    bd_client_free(c);
}

Test(client, arguments_are_checked_before_sending)
{
    bd_client *c = offline_client();
    bd_client_err err;
    json_t *out = json_true();
    int stop = 7;
    assert_invalid(bd_client_report(c, 5, 1, NAN, -1, &stop, &err), &err, "value");
    cr_assert_eq(stop, 0);
    assert_invalid(bd_client_report(c, 5, INFINITY, 0.5, -1, &stop, &err), &err, "step");
    assert_invalid(bd_client_report(c, 0, 1, 0.5, -1, &stop, &err), &err, "trial_id");
    assert_invalid(bd_client_complete(c, 5, NAN, &err), &err, "value");
    bd_client_completion bad_kind = {.kind = (bd_client_done_kind)9, .runtime = -1, .elapsed_seconds = -1};
    assert_invalid(bd_client_complete_ex(c, 5, &bad_kind, NULL, &err), &err, "kind");
    bd_client_completion bad_runtime = {.kind = BD_CLIENT_DONE_TIMEOUT, .runtime = INFINITY, .elapsed_seconds = -1};
    assert_invalid(bd_client_complete_ex(c, 5, &bad_runtime, NULL, &err), &err, "runtime");
    assert_invalid(bd_client_suggest(c, 1, "w", 101, &out, &err), &err, "count");
    cr_assert_null(out);
    assert_invalid(bd_client_suggest(c, 0, "w", 1, &out, &err), &err, "study_id");
    assert_invalid(bd_client_suggest(c, 1, "\xff\xfe", 1, &out, &err), &err, "worker");
    assert_invalid(bd_client_get_study(c, -3, &out, &err), &err, "study_id");
    assert_invalid(bd_client_list_studies(c, -1, 0, NULL, &out, &err), &err, "after");
    assert_invalid(bd_client_list_studies(c, 0, 1001, NULL, &out, &err), &err, "limit");
    bd_client_trial_query q = {.state = "done"};
    assert_invalid(bd_client_list_trials(c, 1, &q, &out, &err), &err, "state");
    q = (bd_client_trial_query){.limit = 1001};
    assert_invalid(bd_client_list_trials(c, 1, &q, &out, &err), &err, "limit");
    q = (bd_client_trial_query){.has_instance = 1, .instance = -1};
    assert_invalid(bd_client_list_trials(c, 1, &q, &out, &err), &err, "instance");
    json_t *three = json_integer(3);
    assert_invalid(bd_client_create_study(c, three, &out, &err), &err, "definition");
    json_decref(three);
    assert_invalid(bd_client_export_csv(c, 1, NULL, &err), &err, "out");
    assert_invalid(bd_client_request(c, "get", "/v1/me", NULL, NULL, NULL, &out, &err), &err, "method");
    assert_invalid(bd_client_request(c, "GET", "v1/me", NULL, NULL, NULL, &out, &err), &err, "path");
    assert_invalid(bd_client_request(c, "GET", "/v1/me\r\nX: y", NULL, NULL, NULL, &out, &err), &err, "path");
    assert_invalid(bd_client_request(c, "POST", "/v1/me", NULL, "k\r\nX: y", NULL, &out, &err), &err,
                   "idempotency_key");
    bd_client_free(c);
}

Test(client, no_answer_is_a_network_error_without_status)
{
    bd_client *c = offline_client();
    bd_client_err err;
    json_t *out = json_true();
    int rc = bd_client_get_study(c, 1, &out, &err);
    cr_assert_eq(rc, BD_CLIENT_ENET, "rc %d: %s", rc, err.message);
    cr_assert_null(out);
    cr_assert_eq(err.status, 0);
    cr_assert_str_eq(err.code, "network");
    cr_assert_str_eq(err.field, "");
    cr_assert(strstr(err.message, "/v1/studies/1"), "%s", err.message);
    bd_client_free(c);
}

Test(client, error_text_is_cut_on_a_utf8_boundary)
{
    bd_client_err err;
    char msg[600];
    memset(msg, 'a', 510);
    strcpy(msg + 510, "\xc3\xa9 and more"); /* the 2-byte e-acute straddles the 511-byte limit */
    cr_assert_eq(bdc_err_set(&err, BD_CLIENT_EHTTP, 400, "invalid_argument", "x", "%s", msg), BD_CLIENT_EHTTP);
    cr_assert_eq(strlen(err.message), 510);
    cr_assert_eq(err.status, 400);
    memset(msg, 'b', 509);
    strcpy(msg + 509, "\xc3\xa9");
    bdc_err_set(&err, BD_CLIENT_EHTTP, 400, "invalid_argument", NULL, "%s", msg);
    cr_assert_eq(strlen(err.message), 511, "a complete sequence at the end is kept");
    cr_assert_str_eq(err.field, "");
}
