/* main.c: the banditd daemon: parse the configuration, open the engine,
 * serve HTTP until SIGINT or SIGTERM, then stop gracefully (requests in
 * progress are answered, new ones get 503) and close the engine.
 *
 * Signals are blocked before any thread starts, so every thread inherits the
 * mask and only the main thread's sigwait() sees them.
 *
 * Every connection is a descriptor: the soft open-file limit is raised to
 * the hard one first, since the common default of 1024 would cap the
 * daemon at about a thousand clients, slow ones included. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "../api/http_server.h"
#include "config.h"
#include "engine.h"
#include "log.h"

#define REAPER_INTERVAL 0.5 /* seconds between lease-expiry sweeps */
#define STOP_GRACE 10.0     /* seconds in-flight requests get to finish */

static void raise_fd_limit(void)
{
    struct rlimit rl;
    unsigned long long was;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        bd_log(BD_LOG_WARN, "cannot read the open-file limit: %s", strerror(errno));
        return;
    }
    if (rl.rlim_cur == rl.rlim_max)
        return;
    was = (unsigned long long)rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
        bd_log(BD_LOG_WARN, "cannot raise the open-file limit from %llu to %llu: %s", was,
               (unsigned long long)rl.rlim_max, strerror(errno));
    else
        bd_log(BD_LOG_INFO, "raised the open-file limit from %llu to %llu", was, (unsigned long long)rl.rlim_max);
}

int main(int argc, char **argv)
{
    bd_config cfg;
    bd_err err;
    bd_engine *engine = NULL;
    bd_http_server *http = NULL;
    bd_engine_opts eopts;
    bd_http_opts hopts;
    sigset_t stop_signals;
    const char *first_token;
    int rc, sig;

    bd_err_clear(&err);
    rc = bd_config_parse(&cfg, argc, argv, NULL, &err);
    if (rc == BD_CONFIG_HELP) {
        bd_config_usage(stdout);
        return 0;
    }
    if (rc == BD_CONFIG_VERSION) {
        printf("banditd %s\n", BD_VERSION);
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "banditd: %s\nTry 'banditd --help'.\n", err.message);
        return 2;
    }

    /* glibc's default of 8 malloc arenas per core lets each handler thread
     * keep its own free memory: 20 large studies created one after another
     * peaked at 155 MB of RSS, 102 MB with 2 arenas (issue 20). Two per
     * core keeps allocation contention-free on the cores there are. */
    mallopt(M_ARENA_MAX, 2 * (int)sysconf(_SC_NPROCESSORS_ONLN));
    /* A free must not hand memory back to the OS each time the top of an
     * arena passes 128 KB (glibc's default): a batch of 30 requests on the
     * HTTP loop thread allocates about that, so every batch paid a
     * madvise, the page faults to take the memory again and a TLB flush (a
     * quarter of the daemon's CPU under load, issue 18). The reaper's
     * malloc_trim every 10 s still gives idle memory back. Setting these
     * fixes glibc's sliding mmap threshold, so it is set as well. */
    mallopt(M_TRIM_THRESHOLD, 8 << 20);
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    bd_log_set_level(cfg.log_level);
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);
    raise_fd_limit();

    memset(&eopts, 0, sizeof eopts);
    eopts.db_path = cfg.db_path;
    eopts.sync_full = cfg.sync_full;
    eopts.default_lease_seconds = cfg.lease_seconds;
    eopts.admin_token_path = NULL;
    eopts.admin_token_file = cfg.admin_token_file[0] ? cfg.admin_token_file : NULL;
    eopts.reaper_interval = REAPER_INTERVAL;
    eopts.user_concurrency = cfg.user_concurrency;
    eopts.max_studies = cfg.max_studies_per_user;
    eopts.max_definition_bytes = cfg.max_definition_bytes_per_user;
    eopts.study_cache_bytes = (size_t)cfg.study_cache_mb << 20;
    eopts.advertise_url = cfg.advertise_url[0] ? cfg.advertise_url : NULL;
    eopts.ownership_lease_seconds = cfg.ownership_lease_seconds;
    if (eopts.advertise_url && !bd_engine_db_is_url(cfg.db_path))
        bd_log(BD_LOG_WARN, "--advertise-url is ignored with SQLite: one daemon serves a SQLite database");
    rc = bd_engine_open(&eopts, &engine, &err);
    if (rc < 0) {
        bd_log(BD_LOG_ERROR, "cannot open the database %s: %s", cfg.db_display, err.message);
        return 1;
    }
    first_token = bd_engine_first_admin_token(engine); /* non-NULL only when this start created the admin */
    if (first_token && eopts.admin_token_file) /* the operator's secret: never logged */
        bd_log(BD_LOG_INFO, "created the admin user with the token in %s", cfg.admin_token_file);
    else if (!first_token && eopts.admin_token_file)
        bd_log(BD_LOG_INFO, "the database has users: %s was not read (it is only read on the first start)",
               cfg.admin_token_file);
    else if (first_token && strcmp(cfg.db_path, ":memory:") == 0)
        bd_log(BD_LOG_WARN, "in-memory database: the admin token is %s (nothing is saved)", first_token);
    else if (first_token)
        bd_log(BD_LOG_INFO, "created the admin user; its token is in %s.admin-token (mode 0600)", cfg.db_path);

    memset(&hopts, 0, sizeof hopts);
    hopts.addr = (const struct sockaddr *)&cfg.listen_addr;
    hopts.threads = cfg.threads;
    hopts.handlers = cfg.handlers;
    hopts.max_body_bytes = cfg.max_body_bytes;
    hopts.header_timeout_seconds = cfg.header_timeout;
    hopts.per_ip_limit = cfg.per_ip_limit;
    hopts.run_inline = !bd_engine_db_is_url(cfg.db_path);
    rc = bd_http_server_start(&hopts, engine, &http, &err);
    if (rc < 0) {
        bd_log(BD_LOG_ERROR, "cannot listen on %s: %s", cfg.listen, err.message);
        bd_engine_close(engine);
        return 1;
    }
    bd_log(BD_LOG_INFO, "banditd %s listening on %s (port %u, %d threads, %d handlers, db %s, sync %s)", BD_VERSION,
           cfg.listen, bd_http_server_port(http), cfg.threads, cfg.handlers, cfg.db_display,
           cfg.sync_full ? "full" : "normal");

    do {
        rc = sigwait(&stop_signals, &sig);
    } while (rc != 0);
    bd_log(BD_LOG_INFO, "received %s; stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");

    bd_http_server_stop(http, STOP_GRACE);
    bd_engine_close(engine);
    bd_log(BD_LOG_INFO, "stopped");
    return 0;
}
