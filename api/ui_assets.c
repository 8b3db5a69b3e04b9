/* ui_assets.c: lookups in the compiled-in dashboard table (see ui_assets.h). */
#include "ui_assets.h"

#include <string.h>

const bd_ui_asset *bd_ui_asset_find(const char *name)
{
    for (size_t i = 0; i < bd_ui_asset_count; i++) {
        if (strcmp(bd_ui_assets[i].name, name) == 0)
            return &bd_ui_assets[i];
    }
    return NULL;
}

int bd_ui_etag_matches(const char *if_none_match, const char *etag)
{
    size_t elen = strlen(etag);
    const char *p = if_none_match;

    if (!p)
        return 0;
    while (*p) {
        size_t n;

        p += strspn(p, " \t,");
        if (strncmp(p, "W/", 2) == 0) /* weak comparison is what If-None-Match asks for */
            p += 2;
        n = strcspn(p, ",");
        while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
            n--;
        if ((n == 1 && p[0] == '*') || (n == elen && memcmp(p, etag, elen) == 0))
            return 1;
        p += strcspn(p, ",");
    }
    return 0;
}
