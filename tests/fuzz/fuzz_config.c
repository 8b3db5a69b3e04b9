/* fuzz_config: the daemon's flags and BANDITD_* environment variables
 * (server/config.c bd_config_parse).
 *
 * Input: lines; a line starting with "env:" is an environment entry
 * ("env:BANDITD_THREADS=4"), any other line one argument after argv[0].
 * Name resolution is made numeric-only (getaddrinfo below), so a host name
 * fails fast instead of asking DNS.
 * Oracles: a result of RUN leaves a configuration main() can use as is
 * (every field in its documented range); any other result is HELP, VERSION
 * or BD_EINVAL with a message. */
#define _GNU_SOURCE /* RTLD_NEXT */
#include <dlfcn.h>
#include <math.h>
#include <netdb.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "server/config.h"

#define MAX_ARGS 64

typedef int (*getaddrinfo_fn)(const char *, const char *, const struct addrinfo *, struct addrinfo **);

/* Overrides libc's (and the sanitizer's interceptor, a weak symbol) for this
 * binary only: the same lookup with AI_NUMERICHOST added. */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints, struct addrinfo **res)
{
    static getaddrinfo_fn real;
    struct addrinfo h = {0};

    if (!real)
        real = (getaddrinfo_fn)dlsym(RTLD_NEXT, "getaddrinfo");
    FUZZ_CHECK(real != NULL, "no getaddrinfo");
    if (hints)
        h = *hints;
    h.ai_flags |= AI_NUMERICHOST;
    return real(node, service, &h, res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size + 1), *argv[MAX_ARGS + 2], *envp[MAX_ARGS + 1];
    int argc = 1, envc = 0, rc;
    bd_config cfg;
    bd_err err;

    FUZZ_CHECK(copy != NULL, "out of memory");
    memcpy(copy, data, size);
    copy[size] = '\0';
    argv[0] = "banditd";
    for (char *line = copy, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (strncmp(line, "env:", 4) == 0 && envc < MAX_ARGS)
            envp[envc++] = line + 4;
        else if (strncmp(line, "env:", 4) != 0 && argc < MAX_ARGS + 1)
            argv[argc++] = line;
    }
    argv[argc] = NULL;
    envp[envc] = NULL;

    bd_err_clear(&err);
    rc = bd_config_parse(&cfg, argc, argv, envp, &err);
    if (rc == BD_CONFIG_RUN) {
        FUZZ_CHECK(cfg.threads >= 1 && cfg.threads <= 1024, "threads %d", cfg.threads);
        FUZZ_CHECK(cfg.max_body_bytes >= 1, "max_body_bytes %zu", cfg.max_body_bytes);
        FUZZ_CHECK(cfg.lease_seconds > 0 && isfinite(cfg.lease_seconds), "lease %g", cfg.lease_seconds);
        FUZZ_CHECK(cfg.db_path[0] != '\0', "empty db path");
        FUZZ_CHECK(memchr(cfg.admin_token_file, '\0', sizeof cfg.admin_token_file), "token file not a string");
        FUZZ_CHECK(memchr(cfg.listen, '\0', sizeof cfg.listen) && cfg.listen[0], "listen not a string");
        FUZZ_CHECK(cfg.listen_addr_len > 0 && cfg.listen_addr_len <= sizeof cfg.listen_addr, "address length %u",
                   (unsigned)cfg.listen_addr_len);
        FUZZ_CHECK(cfg.listen_addr.ss_family == AF_INET || cfg.listen_addr.ss_family == AF_INET6, "family %d",
                   cfg.listen_addr.ss_family);
        FUZZ_CHECK(cfg.log_level >= BD_LOG_DEBUG && cfg.log_level <= BD_LOG_ERROR, "log level %d", cfg.log_level);
    } else if (rc != BD_CONFIG_HELP && rc != BD_CONFIG_VERSION) {
        FUZZ_CHECK(rc == BD_EINVAL && err.code == BD_EINVAL && err.message[0], "result %d, message '%s'", rc,
                   err.message);
    }
    free(copy);
    return 0;
}
