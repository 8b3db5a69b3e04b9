/* json_out.c: shortest round-trip reals in serialized JSON (see json_out.h). */
#include "json_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NUMBER 40 /* longer tokens are copied as they are */

static int is_number_char(char c)
{
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Writes into out the shortest form of the real token tok (length len) that
 * parses back to the same double; 0 when no shorter form exists. */
static size_t shorter_real(const char *tok, size_t len, char out[MAX_NUMBER + 8])
{
    char copy[MAX_NUMBER + 1];
    memcpy(copy, tok, len);
    copy[len] = '\0';
    double v = strtod(copy, NULL);
    for (int digits = 15; digits <= 16; digits++) {
        int m = snprintf(out, MAX_NUMBER + 8, "%.*g", digits, v);
        if (m <= 0 || strtod(out, NULL) != v)
            continue;
        if (!strpbrk(out, ".eEni")) /* keep it a real: 300 -> 300.0 */
            m += snprintf(out + m, MAX_NUMBER + 8 - (size_t)m, ".0");
        return (size_t)m < len ? (size_t)m : 0;
    }
    return 0;
}

size_t bd_json_shorten_reals(char *s, size_t n)
{
    size_t r = 0, w = 0;
    while (r < n) {
        if (s[r] == '"') { /* a string: copied through, escapes included */
            s[w++] = s[r++];
            while (r < n && s[r] != '"') {
                if (s[r] == '\\' && r + 1 < n)
                    s[w++] = s[r++];
                s[w++] = s[r++];
            }
            if (r < n)
                s[w++] = s[r++];
            continue;
        }
        if (s[r] != '-' && !(s[r] >= '0' && s[r] <= '9')) {
            s[w++] = s[r++];
            continue;
        }
        size_t start = r;
        int real = 0;
        for (; r < n && is_number_char(s[r]); r++)
            real |= s[r] == '.' || s[r] == 'e' || s[r] == 'E';
        size_t len = r - start;
        char shorter[MAX_NUMBER + 8];
        size_t m = real && len <= MAX_NUMBER ? shorter_real(s + start, len, shorter) : 0;
        if (m) {
            memcpy(s + w, shorter, m);
            w += m;
        } else {
            memmove(s + w, s + start, len); /* w <= start: copying forward is safe */
            w += len;
        }
    }
    return w;
}
