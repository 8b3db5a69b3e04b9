/* config.c: flag and environment parsing for the daemon (see config.h).
 *
 * One table lists every setting once: its flag, its variable, its default and
 * the function that validates and stores a value; --help is printed from the
 * same table, so the documentation cannot drift from the parser. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../storage/store.h"

extern char **environ;

typedef int (*setter_fn)(bd_config *cfg, const char *value, const char *who, bd_err *err);

typedef struct option_def {
    const char *flag; /* "--listen" */
    const char *env;  /* "BANDITD_LISTEN" */
    const char *arg;  /* placeholder in --help */
    const char *def;  /* default value as text; NULL: computed (see help) */
    const char *help;
    setter_fn set;
} option_def;

#define MAX_THREADS 1024
#define MAX_HANDLERS 4096
#define MAX_LEASE_SECONDS (366.0 * 86400.0)
#define MAX_OWNERSHIP_LEASE_SECONDS 3600.0
#define MAX_BODY_LIMIT ((size_t)1 << 30)
#define MAX_PER_IP_LIMIT 1000000
#define MAX_HEADER_TIMEOUT 3600

/* Parses a decimal integer made of digits only (no sign, no spaces). */
static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    unsigned long long v = 0;

    if (!*s)
        return BD_EINVAL;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return BD_EINVAL;
        if (v > (max - (unsigned)(*s - '0')) / 10)
            return BD_EINVAL;
        v = v * 10 + (unsigned)(*s - '0');
    }
    *out = v;
    return 0;
}

static int set_listen(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    char host[256];
    const char *colon, *port;
    size_t hlen;
    unsigned long long p;
    struct addrinfo hints, *res = NULL, *pick = NULL;
    int rc;

    if (strlen(value) >= sizeof cfg->listen)
        return bd_err_set(err, BD_EINVAL, who, "%s: address too long", who);
    if (value[0] == '[') {
        const char *close = strchr(value, ']');
        if (!close || close[1] != ':')
            return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not [IPv6]:PORT", who, value);
        hlen = (size_t)(close - value - 1);
        memcpy(host, value + 1, hlen);
        port = close + 2;
    } else {
        colon = strrchr(value, ':');
        if (!colon)
            return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not HOST:PORT (e.g. 127.0.0.1:8080)", who, value);
        hlen = (size_t)(colon - value);
        if (memchr(value, ':', hlen))
            return bd_err_set(err, BD_EINVAL, who, "%s: write an IPv6 address in brackets, e.g. [::1]:8080", who);
        memcpy(host, value, hlen);
        port = colon + 1;
    }
    host[hlen] = '\0';
    if (parse_uint(port, 65535, &p) != 0)
        return bd_err_set(err, BD_EINVAL, who, "%s: port '%s' is not a number in 0..65535", who, port);
    if (hlen == 0 || strcmp(host, "*") == 0)
        strcpy(host, "0.0.0.0");

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0)
        return bd_err_set(err, BD_EINVAL, who, "%s: cannot resolve '%s': %s", who, host, gai_strerror(rc));
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            pick = ai;
            break;
        }
        if (ai->ai_family == AF_INET6 && !pick)
            pick = ai;
    }
    if (!pick || pick->ai_addrlen > sizeof cfg->listen_addr) {
        freeaddrinfo(res);
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' has no IPv4 or IPv6 address", who, host);
    }
    memcpy(&cfg->listen_addr, pick->ai_addr, pick->ai_addrlen);
    cfg->listen_addr_len = pick->ai_addrlen;
    freeaddrinfo(res);
    strcpy(cfg->listen, value);
    return 0;
}

static int set_db(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    if (!*value)
        return bd_err_set(err, BD_EINVAL, who, "%s: the database path is empty", who);
    if (strlen(value) >= sizeof cfg->db_path)
        return bd_err_set(err, BD_EINVAL, who, "%s: path too long", who);
    /* A postgresql:// or postgres:// URL goes to libpq as it is (storage/
     * chooses the backend by the prefix); the checks of a SQLite path
     * (no file: URI, no symbolic link) are the store's, at open. */
    strcpy(cfg->db_path, value);
    bd_store_redact_url(value, cfg->db_display, sizeof cfg->db_display); /* never a password in the log */
    return 0;
}

static int set_admin_token_file(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    if (!*value)
        return bd_err_set(err, BD_EINVAL, who, "%s: the path is empty", who);
    if (strlen(value) >= sizeof cfg->admin_token_file)
        return bd_err_set(err, BD_EINVAL, who, "%s: path too long", who);
    strcpy(cfg->admin_token_file, value);
    return 0;
}

static int set_threads(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, MAX_THREADS, &v) != 0 || v < 1)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a whole number in 1..%d", who, value, MAX_THREADS);
    cfg->threads = (int)v;
    return 0;
}

static int set_handlers(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, MAX_HANDLERS, &v) != 0 || v < 1)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a whole number in 1..%d", who, value, MAX_HANDLERS);
    cfg->handlers = (int)v;
    return 0;
}

static int set_user_concurrency(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, MAX_HANDLERS, &v) != 0 || v < 1)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a whole number in 1..%d", who, value, MAX_HANDLERS);
    cfg->user_concurrency = (int)v;
    return 0;
}

/* Quotas are counts and byte totals: 1 .. 2^50 keeps every sum in int64. */
#define MAX_QUOTA (1ULL << 50)

static int set_max_studies(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, MAX_QUOTA, &v) != 0 || v < 1)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a whole number >= 1", who, value);
    cfg->max_studies_per_user = (long long)v;
    return 0;
}

static int set_max_definition_bytes(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, MAX_QUOTA, &v) != 0 || v < 1)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a whole number >= 1", who, value);
    cfg->max_definition_bytes_per_user = (long long)v;
    return 0;
}

static int set_study_cache_mb(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, 1ULL << 20, &v) != 0 || v < 1)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a whole number of MiB in 1..1048576", who, value);
    cfg->study_cache_mb = (long long)v;
    return 0;
}

static int set_log_level(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    if (bd_log_level_parse(value, &cfg->log_level) != 0)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not one of debug, info, warn, error", who, value);
    return 0;
}

static int set_lease(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(value, &end);
    if (!(value[0] >= '0' && value[0] <= '9') || *end || errno || !isfinite(v) || v <= 0 || v > MAX_LEASE_SECONDS)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a number of seconds in (0, %.0f]", who, value,
                          MAX_LEASE_SECONDS);
    cfg->lease_seconds = v;
    return 0;
}

static int set_sync(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    if (strcmp(value, "normal") == 0)
        cfg->sync_full = 0;
    else if (strcmp(value, "full") == 0)
        cfg->sync_full = 1;
    else
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not one of normal, full", who, value);
    return 0;
}

static int set_max_body(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, MAX_BODY_LIMIT, &v) != 0 || v < 1)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a byte count in 1..%zu", who, value, MAX_BODY_LIMIT);
    cfg->max_body_bytes = (size_t)v;
    return 0;
}

static int set_per_ip_limit(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, MAX_PER_IP_LIMIT, &v) != 0)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a connection count in 0..%d (0: no limit)", who, value,
                          MAX_PER_IP_LIMIT);
    cfg->per_ip_limit = (unsigned)v;
    return 0;
}

static int set_header_timeout(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    unsigned long long v;

    if (parse_uint(value, MAX_HEADER_TIMEOUT, &v) != 0 || v < 1)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a whole number of seconds in 1..%d", who, value,
                          MAX_HEADER_TIMEOUT);
    cfg->header_timeout = (unsigned)v;
    return 0;
}

/* The URL peers and operators reach this daemon at: http(s)://, printable,
 * no spaces (it goes into the daemons table and logs as given). */
static int set_advertise_url(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    if (strncmp(value, "http://", 7) != 0 && strncmp(value, "https://", 8) != 0)
        return bd_err_set(err, BD_EINVAL, who, "%s: must be an http:// or https:// URL", who);
    if (strlen(value) >= sizeof cfg->advertise_url)
        return bd_err_set(err, BD_EINVAL, who, "%s: URL too long (at most %zu bytes)", who,
                          sizeof cfg->advertise_url - 1);
    for (const char *p = value; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
            return bd_err_set(err, BD_EINVAL, who, "%s: the URL has a space or a non-printable byte", who);
    strcpy(cfg->advertise_url, value);
    return 0;
}

static int set_ownership_lease(bd_config *cfg, const char *value, const char *who, bd_err *err)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(value, &end);
    if (!(value[0] >= '0' && value[0] <= '9') || *end || errno || !isfinite(v) || v < 0.1 ||
        v > MAX_OWNERSHIP_LEASE_SECONDS)
        return bd_err_set(err, BD_EINVAL, who, "%s: '%s' is not a number of seconds in [0.1, %.0f]", who, value,
                          MAX_OWNERSHIP_LEASE_SECONDS);
    cfg->ownership_lease_seconds = v;
    return 0;
}

static const option_def options[] = {
    {"--listen", "BANDITD_LISTEN", "HOST:PORT", "127.0.0.1:8080",
     "address to serve HTTP on; [::1]:8080 for IPv6, port 0 picks a free port", set_listen},
    {"--db", "BANDITD_DB", "PATH", "./banditd.db",
     "SQLite database file, or a PostgreSQL database as a postgresql:// (or postgres://) URL; the first start "
     "creates the user admin and writes its token to PATH.admin-token (mode 0600) unless --admin-token-file is "
     "given, which PostgreSQL needs (prefer a password in ~/.pgpass or PGPASSWORD to one in the URL)",
     set_db},
    {"--admin-token-file", "BANDITD_ADMIN_TOKEN_FILE", "FILE", NULL,
     "read the admin's token from FILE instead (a Docker or systemd secret), on the first start only: "
     "bdt_1_ and 64 random lowercase hex digits, e.g. printf 'bdt_1_%s\\n' \"$(od -An -vtx1 -N32 "
     "/dev/urandom | tr -d ' \\n')\"; FILE must be a regular file that only its owner may write",
     set_admin_token_file},
    {"--threads", "BANDITD_THREADS", "N", NULL,
     "HTTP polling threads, which read requests and send answers (default: 2 x online cores); with SQLite one thread "
     "polls and runs the short study requests itself, and this is ignored", set_threads},
    {"--handlers", "BANDITD_HANDLERS", "N", "64",
     "threads that run requests; a slow scheduler call holds one, never a polling thread", set_handlers},
    {"--user-concurrency", "BANDITD_USER_CONCURRENCY", "N", "16",
     "requests to slow studies (10 ms or more per request) that one user may have in progress; more get 429, so no "
     "user holds all the handlers",
     set_user_concurrency},
    {"--max-studies-per-user", "BANDITD_MAX_STUDIES_PER_USER", "N", "10000",
     "live studies one user may have, unless an admin set the user's own (PATCH /v1/users/NAME); more get 403",
     set_max_studies},
    {"--max-definition-bytes-per-user", "BANDITD_MAX_DEFINITION_BYTES_PER_USER", "N", "67108864",
     "total bytes of one user's study definitions (as stored), unless an admin set the user's own; more get 403",
     set_max_definition_bytes},
    {"--study-cache-mb", "BANDITD_STUDY_CACHE_MB", "N", "128",
     "estimated memory of the studies kept loaded; idle studies beyond it are dropped and rebuilt from storage "
     "on their next request",
     set_study_cache_mb},
    {"--log-level", "BANDITD_LOG_LEVEL", "LEVEL", "info", "debug (adds a line per request), info, warn or error",
     set_log_level},
    {"--lease-seconds", "BANDITD_LEASE_SECONDS", "S", "300", "trial lease for studies that do not set lease_seconds",
     set_lease},
    {"--sync", "BANDITD_SYNC", "MODE", "normal",
     "normal (survives a crash of banditd) or full (also of the OS; slower commits)", set_sync},
    {"--max-body-bytes", "BANDITD_MAX_BODY_BYTES", "N", "1048576", "largest request body accepted; larger ones get 413",
     set_max_body},
    {"--per-ip-limit", "BANDITD_PER_IP_LIMIT", "N", "256",
     "connections one client address may hold open; more are closed at once (0: no limit)", set_per_ip_limit},
    {"--advertise-url", "BANDITD_ADVERTISE_URL", "URL", NULL,
     "with a PostgreSQL --db: join the cluster of daemons on that database as the member reachable at URL "
     "(each study is served by one member at a time, under an ownership lease); without it a second daemon on "
     "the database is refused. Ignored with SQLite",
     set_advertise_url},
    {"--ownership-lease-seconds", "BANDITD_OWNERSHIP_LEASE_SECONDS", "S", "2",
     "cluster mode: how long a study stays this daemon's after its last request; idle longer, it is dropped and "
     "any member may take it",
     set_ownership_lease},
    {"--header-timeout", "BANDITD_HEADER_TIMEOUT", "S", "10",
     "seconds a request's headers may take to arrive (trickling does not extend it); then the connection is closed",
     set_header_timeout},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

#define HELP_INDENT 22 /* help2man takes a line indented 20+ under an option as its description */
#define HELP_WIDTH 79

/* Writes words (split at spaces) from column HELP_INDENT, wrapped at
 * HELP_WIDTH; a word longer than a line gets a line of its own. */
static void put_wrapped(FILE *f, const char *text)
{
    int col = 0;

    while (*text) {
        size_t n = strcspn(text, " ");
        if (col > HELP_INDENT && col + 1 + (int)n > HELP_WIDTH) {
            fputc('\n', f);
            col = 0;
        }
        if (col == 0)
            col = fprintf(f, "%*s", HELP_INDENT, "");
        else
            col += fprintf(f, " ");
        col += fprintf(f, "%.*s", (int)n, text);
        text += n;
        text += strspn(text, " ");
    }
    fputc('\n', f);
}

/* Laid out for help2man (CMakeLists.txt makes banditd.1 from it): the text
 * before "Options:" becomes DESCRIPTION, and "Options:", "Environment:" and
 * "Files:" become the man page's sections. */
void bd_config_usage(FILE *f)
{
    char line[1024];

    fprintf(f, "Usage: banditd [OPTION]...\n"
               "Hyperparameter-suggestion daemon: serves the banditd HTTP API (JSON over HTTP),\n"
               "which hands workers trials to run and decides from their reports; all state is\n"
               "in one SQLite (or PostgreSQL) database.\n\n"
               "SIGINT or SIGTERM stops the daemon gracefully. Exit status: 0 after a clean stop,\n"
               "1 when the daemon cannot start, 2 for invalid options.\n\n"
               "Options:\n");
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const option_def *o = &options[i];
        snprintf(line, sizeof line, "%s (env %s%s%s)", o->help, o->env, o->def ? ", default " : "",
                 o->def ? o->def : "");
        fprintf(f, "  %s=%s\n", o->flag, o->arg);
        put_wrapped(f, line);
    }
    fprintf(f, "  -h, --help\n");
    put_wrapped(f, "print this help and exit");
    fprintf(f, "  -V, --version\n");
    put_wrapped(f, "print the version and exit");
    fprintf(f, "\nEnvironment:\n"
               "Each option may also be set by a variable; a flag wins, and an empty variable\n"
               "counts as unset.\n\n");
    for (size_t i = 0; i < N_OPTIONS; i++)
        fprintf(f, "  %-24s  same as %s\n", options[i].env, options[i].flag);
    fprintf(f, "\nFiles:\n  PATH, PATH-wal\n");
    put_wrapped(f, "the database (--db) and its write-ahead log, mode 0600");
    fprintf(f, "  PATH.admin-token\n");
    put_wrapped(f, "the admin's token, written with mode 0600 by the start that creates the database, "
                   "unless --admin-token-file is given");
}

static const char *env_lookup(char *const envp[], const char *name)
{
    size_t n = strlen(name);

    for (; *envp; envp++) {
        if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
            return *envp + n + 1;
    }
    return NULL;
}

static const option_def *find_flag(const char *arg, size_t len)
{
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (strlen(options[i].flag) == len && strncmp(options[i].flag, arg, len) == 0)
            return &options[i];
    }
    return NULL;
}

static int default_threads(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);

    if (cores < 1)
        cores = 1;
    if (cores > MAX_THREADS / 2)
        cores = MAX_THREADS / 2;
    return (int)(2 * cores);
}

int bd_config_parse(bd_config *cfg, int argc, char *const argv[], char *const envp[], bd_err *err)
{
    int rc;

    memset(cfg, 0, sizeof *cfg);
    cfg->threads = default_threads();
    cfg->handlers = 64;
    for (size_t i = 0; i < N_OPTIONS; i++) {
        if (options[i].def) {
            rc = options[i].set(cfg, options[i].def, options[i].flag, err);
            if (rc < 0)
                return rc;
        }
    }

    if (!envp)
        envp = environ;
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const char *v = env_lookup(envp, options[i].env);
        if (v && *v) {
            rc = options[i].set(cfg, v, options[i].env, err);
            if (rc < 0)
                return rc;
        }
    }

    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *eq, *value;
        const option_def *o;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
            return BD_CONFIG_HELP;
        if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0)
            return BD_CONFIG_VERSION;
        if (strncmp(arg, "--", 2) != 0)
            return bd_err_set(err, BD_EINVAL, NULL, "unexpected argument '%s'", arg);
        eq = strchr(arg, '=');
        o = find_flag(arg, eq ? (size_t)(eq - arg) : strlen(arg));
        if (!o)
            return bd_err_set(err, BD_EINVAL, NULL, "unknown option '%s'", arg);
        if (eq) {
            value = eq + 1;
        } else {
            if (i + 1 >= argc)
                return bd_err_set(err, BD_EINVAL, o->flag, "%s needs a value (%s)", o->flag, o->arg);
            value = argv[++i];
        }
        rc = o->set(cfg, value, o->flag, err);
        if (rc < 0)
            return rc;
    }
    return BD_CONFIG_RUN;
}
