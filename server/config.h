/* config.h: the daemon's settings from command-line flags and BANDITD_*
 * environment variables. Precedence: built-in default < environment < flag.
 * An empty environment variable counts as unset. Every value is validated
 * here, so main() only has to act on a bd_config. */
#ifndef BD_CONFIG_H
#define BD_CONFIG_H

#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>

#include "common.h"
#include "log.h"

#ifndef BD_VERSION
#define BD_VERSION "0.1.0"
#endif

typedef struct bd_config {
    char listen[256];                    /* "host:port" as given */
    struct sockaddr_storage listen_addr; /* listen resolved (numeric host or name) */
    socklen_t listen_addr_len;
    char db_path[4096]; /* SQLite file, ":memory:", or a postgresql:// (postgres://) URL */
    char db_display[4096]; /* db_path as logged: a URL's password replaced by "***" */
    char admin_token_file[4096]; /* --admin-token-file; "" when not given */
    int threads;        /* HTTP polling threads, >= 1 (default 2 x online cores) */
    int handlers;       /* request-handling threads, >= 1 (default 64) */
    int user_concurrency; /* requests to costly studies per user (server/admission.h), >= 1 */
    long long max_studies_per_user;          /* default quotas of a user, >= 1 */
    long long max_definition_bytes_per_user;
    long long study_cache_mb;                /* --study-cache-mb, >= 1 */
    bd_log_level log_level;
    double lease_seconds;    /* default lease of a study, > 0 */
    int sync_full;           /* 1: --sync full, 0: normal */
    size_t max_body_bytes;   /* request body limit, >= 1 */
    unsigned per_ip_limit;   /* open connections one client address may hold; 0: no limit */
    unsigned header_timeout; /* seconds a request's headers may take to arrive, >= 1 */
    char advertise_url[2048];       /* --advertise-url: "" outside a cluster; else http(s)://, printable */
    double ownership_lease_seconds; /* cluster mode: a study's ownership lease, 0.1 .. 3600 */
} bd_config;

/* What bd_config_parse asks the caller to do. */
enum {
    BD_CONFIG_RUN = 0,    /* start the daemon with *cfg */
    BD_CONFIG_HELP = 1,   /* --help: print bd_config_usage to stdout, exit 0 */
    BD_CONFIG_VERSION = 2 /* --version: print BD_VERSION, exit 0 */
};

/* Fills *cfg from defaults, then envp (an array of "NAME=value" strings ending
 * with NULL; NULL means the process environment), then argv (argv[0] is the
 * program name). Flags are "--name value" or "--name=value"; -h and -V are
 * short for --help and --version. Returns BD_CONFIG_RUN/HELP/VERSION, or
 * BD_EINVAL with err naming the flag or variable and what is wrong with it
 * (err->field is the flag, e.g. "--threads", or the variable name). */
int bd_config_parse(bd_config *cfg, int argc, char *const argv[], char *const envp[], bd_err *err) BD_MUST_CHECK;

/* Writes the --help text (every flag, its variable and its default) to f. */
void bd_config_usage(FILE *f);

#endif
