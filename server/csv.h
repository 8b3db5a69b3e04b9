/* csv.h: RFC 4180 cells for the trial export (GET /v1/studies/{id}/trials.csv).
 *
 * A cell holding a comma, a double quote, CR or LF is quoted and its quotes
 * are doubled. Text that came from users (names, categorical values, worker,
 * reason) and starts with '=', '+', '-', '@', TAB, CR, LF, a space or a
 * full-width '=', '+', '-' or '@' gets a leading '\'' so a spreadsheet
 * shows it as text instead of running it as a formula (OWASP "CSV
 * injection"). Pure functions over a growable buffer. */
#ifndef BD_CSV_H
#define BD_CSV_H

#include <jansson.h>
#include <stddef.h>

typedef struct bd_csv_buf {
    char *data; /* owned (free with bd_csv_buf_free); not NUL-terminated */
    size_t len, cap;
} bd_csv_buf;

void bd_csv_buf_free(bd_csv_buf *b);
/* Forgets the contents, keeps the allocation. */
void bd_csv_buf_reset(bd_csv_buf *b);

/* Appends a separator: ',' before every cell but a row's first. */
void bd_csv_sep(bd_csv_buf *b, int first);
/* Appends CRLF (RFC 4180 line ending). */
void bd_csv_eol(bd_csv_buf *b);
/* Appends text (NULL: an empty cell) quoted as needed; user != 0 applies
 * the formula-injection guard. */
void bd_csv_text(bd_csv_buf *b, const char *text, int user);
/* Appends a number in the shortest form that reads back to the same double;
 * NAN or an infinity: an empty cell. */
void bd_csv_number(bd_csv_buf *b, double v);
/* Appends a JSON value as a cell: a string as user text, a number, true /
 * false, null or NULL as an empty cell, anything else as compact JSON
 * (user text). */
void bd_csv_json(bd_csv_buf *b, const json_t *v);

#endif
