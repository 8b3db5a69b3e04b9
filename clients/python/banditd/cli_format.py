"""banditd.cli_format: how bdctl shows numbers, times, configs and tables.

Plain text for a terminal: no colours, no terminal-width probing, so the
output is the same in a pipe and in a test. Every helper accepts what the
API may send (None for an absent value, ints or floats) and never raises
on a surprising type: a study written by a newer daemon still prints.
"""

import json
import time

# Characters a terminal acts on: C0 controls but TAB and LF, DEL, C1 controls
# and the bidirectional overrides. A study or worker name is another user's
# text, and an escape sequence in it could clear the screen or retitle the
# window (issue 20), so bdctl shows them as \xNN / \uNNNN.
_TERMINAL_UNSAFE = {c: "\\x%02x" % c for c in list(range(0x20)) + list(range(0x7F, 0xA0)) if c not in (0x09, 0x0A)}
_TERMINAL_UNSAFE.update({c: "\\u%04x" % c for c in [0x200E, 0x200F] + list(range(0x202A, 0x202F)) +
                         list(range(0x2066, 0x206A))})


def terminal_safe(text):
    """text with the characters a terminal would act on escaped."""
    return text.translate(_TERMINAL_UNSAFE)


class TerminalSafe:
    """A text stream that writes terminal_safe(text); the rest (buffer,
    flush, isatty...) is the wrapped stream's, so binary exports stay raw."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        return self._stream.write(terminal_safe(text))

    def __getattr__(self, name):
        return getattr(self._stream, name)


def csv_guard(text):
    """The server's formula guard (server/csv.c) for a CSV cell of user text:
    a leading ' when it starts with = + - @, a blank, CR or LF, or a
    full-width = + - @, so a spreadsheet does not run it."""
    if text and (text[0] in "=+-@\t\r\n " or text[0] in "\uff1d\uff0b\uff0d\uff20"):
        return "'" + text
    return text


STATE_ABBREV = (("running", "run"), ("completed", "ok"), ("stopped", "stop"),
                ("failed", "fail"), ("expired", "exp"))


def num(v, digits=6):
    """A number in at most `digits` significant digits; '-' for None."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "%.*g" % (digits, v)
    return str(v)


def when(ts):
    """A Unix time as local 'YYYY-MM-DD HH:MM:SS'; '-' when absent."""
    if not isinstance(ts, (int, float)) or isinstance(ts, bool) or ts <= 0:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def compact_json(v):
    return json.dumps(v, separators=(",", ":"), sort_keys=False)


def config_text(config):
    """A config as 'name=value name=value' (strings unquoted unless they hold a space)."""
    if not isinstance(config, dict):
        return compact_json(config)
    parts = []
    for k, v in config.items():
        if isinstance(v, str):
            text = v if v and " " not in v and "=" not in v else json.dumps(v)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            text = num(v)
        else:
            text = compact_json(v)
        parts.append("%s=%s" % (k, text))
    return " ".join(parts)


def counts_text(counts):
    """A study's trial counts by state as '12: 2 run, 8 ok, 2 stop' (zero states left out)."""
    if not isinstance(counts, dict):
        return "-"
    parts = ["%d %s" % (counts[k], short) for k, short in STATE_ABBREV
             if isinstance(counts.get(k), int) and counts[k]]
    total = counts.get("total")
    head = str(total) if isinstance(total, int) else "?"
    return head + (": " + ", ".join(parts) if parts else "")


def table(headers, rows, out, right=()):
    """Writes rows (lists of str) under headers, columns padded to their widest
    cell; columns whose index is in `right` are right-aligned (numbers)."""
    widths = [len(h) for h in headers]
    for r in rows:
        for i, cell in enumerate(r):
            widths[i] = max(widths[i], len(cell))
    table_rows([headers] + list(rows), widths, out, right)
    return widths


def table_rows(rows, widths, out, right=()):
    """Writes rows with given minimum widths (a streamed table reuses the first page's)."""
    for r in rows:
        cells = []
        for i, cell in enumerate(r):
            w = widths[i] if i < len(widths) else 0
            cells.append(cell.rjust(w) if i in right else cell.ljust(w))
        out.write("  ".join(cells).rstrip() + "\n")


def tree(v, out, indent=0, key=None, max_items=50):
    """A generic indented view of any JSON value (a scheduler bdctl has no view
    for). Lists longer than max_items show their first items and a count."""
    pad = "  " * indent
    label = "%s%s:" % (pad, key) if key is not None else pad.rstrip() and pad
    if isinstance(v, dict):
        if key is not None:
            out.write(label + ("" if v else " {}") + "\n")
        for k, x in v.items():
            tree(x, out, indent + (1 if key is not None else 0), k, max_items)
    elif isinstance(v, list) and any(isinstance(x, (dict, list)) for x in v):
        if key is not None:
            out.write("%s (%d)\n" % (label, len(v)))
        for i, x in enumerate(v[:max_items]):
            tree(x, out, indent + 1, "[%d]" % i, max_items)
        if len(v) > max_items:
            out.write("%s  ... %d more\n" % (pad, len(v) - max_items))
    else:
        if isinstance(v, list):
            shown = ", ".join(num(x) if not isinstance(x, str) else x for x in v[:max_items])
            text = "[" + shown + (", ... %d more" % (len(v) - max_items) if len(v) > max_items else "") + "]"
        elif isinstance(v, str):
            text = v
        elif v is None:
            text = "null"
        else:
            text = num(v)
        out.write(("%s %s" % (label, text) if key is not None else pad + text) + "\n")
