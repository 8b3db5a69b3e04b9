"""curve_file: the resumable gzip CSV files of the learning-curve tables
(make_sgd_curves.py, make_mlp_curves.py): each run appends rows as gzip
members, so a killed run loses at most the row it was writing."""

import csv
import gzip
import io
import os
import zlib


def read_rows(path, header):
    """The complete rows already in path (a truncated tail is dropped and the file rewritten)."""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    raw, truncated = b"", False
    while data:  # member by member: a member that does not end (a killed append) is dropped whole
        d = zlib.decompressobj(wbits=31)
        try:
            out = d.decompress(data) + d.flush()
        except zlib.error:
            truncated = True
            break
        if not d.eof:
            truncated = True
            break
        raw += out
        data = d.unused_data
    rows = []
    for rec in csv.reader(io.StringIO(raw.decode("ascii", "replace"))):
        if not rec or rec[0] == "config_id":
            continue
        if len(rec) == len(header):
            rows.append(rec)
        else:
            truncated = True
    if truncated:
        print("dropping a truncated tail of %s; keeping %d rows" % (path, len(rows)), flush=True)
        write_all(path, rows, header)
    return rows


def write_all(path, rows, header):
    tmp = path + ".tmp"
    with gzip.GzipFile(tmp, "wb", compresslevel=9, mtime=0) as gz, \
            io.TextIOWrapper(gz, encoding="ascii", newline="") as f:  # mtime=0: same rows, same bytes
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    os.replace(tmp, path)
