/* ui_assets.h: the dashboard's files (api/ui/), compiled into the binary.
 *
 * The table is generated at build time by api/embed_ui.cmake into
 * <build>/generated/bd_ui_files.c; nothing is read from disk at run time,
 * so a request can only ever name one of these entries. Every pointer is
 * static and lives as long as the program. */
#ifndef BD_API_UI_ASSETS_H
#define BD_API_UI_ASSETS_H

#include <stddef.h>

typedef struct bd_ui_asset {
    const char *name;         /* path below api/ui/: "index.html", "vendor/uPlot.min.css" */
    const char *content_type; /* "text/javascript; charset=utf-8", ... */
    const char *etag;         /* quoted strong validator from the content's SHA-256 */
    const unsigned char *data;
    size_t len;
} bd_ui_asset;

extern const bd_ui_asset bd_ui_assets[];
extern const size_t bd_ui_asset_count;

/* The asset called name (borrowed, static), or NULL. */
const bd_ui_asset *bd_ui_asset_find(const char *name);

/* Whether an If-None-Match header value (may be NULL) names etag: a
 * comma-separated list of quoted tags, optionally W/-prefixed, or "*". */
int bd_ui_etag_matches(const char *if_none_match, const char *etag);

#endif
