"""bench_common: small helpers shared by the Python campaigns in tests/bench
(kill_storm.py, disk_fault_campaign.py). Standard library only.

- use_build(dir): points bdtest at <dir>/banditd (and the fault shim) and
  returns the bdtest module; the daemon harness is tests/integration/bdtest.py,
  not a second one.
- describe(): date, machine, source state and load average, the first columns
  of every figures table in tests/bench/README.md.
- md_table(headers, rows): a Markdown table ready to paste.
- report_main(doc, load, report, plot): the command line the report scripts
  share (runs... [--md FILE] [--png FILE]).
"""

import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, "..", ".."))
INTEGRATION = os.path.join(SOURCE, "tests", "integration")


def use_build(build, tmpdir=None):
    """Sets BANDITD (and BD_FAULT_SHIM when built) from the build directory,
    optionally the directory temporary databases go to, and imports bdtest."""
    binary = os.path.abspath(os.path.join(build, "banditd"))
    if not os.access(binary, os.X_OK):
        sys.exit("%s not found; build first: cmake --build %s -j2" % (binary, build))
    os.environ["BANDITD"] = binary
    shim = os.path.abspath(os.path.join(build, "tests", "bd_fault_shim.so"))
    if os.path.exists(shim):
        os.environ["BD_FAULT_SHIM"] = shim
    if tmpdir:
        os.makedirs(tmpdir, exist_ok=True)
        tempfile.tempdir = tmpdir
    sys.dont_write_bytecode = True
    if INTEGRATION not in sys.path:
        sys.path.insert(0, INTEGRATION)
    import bdtest  # noqa: E402 - after BANDITD is set

    return bdtest


def fs_type(path):
    try:
        out = subprocess.run(["df", "--output=fstype", path], capture_output=True, text=True,
                             check=True).stdout.split()
        return out[-1] if len(out) > 1 else "?"
    except (OSError, subprocess.CalledProcessError):
        return "?"


def loadavg():
    return "%.2f" % os.getloadavg()[0]


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%d-core %s, %s" % (os.cpu_count() or 0, model, fs_type(tempfile.gettempdir()))


def source():
    """Short commit, its subject, and '+ changes' when the tree differs from it."""
    def git(*args):
        return subprocess.run(["git", "-C", SOURCE] + list(args), capture_output=True, text=True).stdout.strip()
    try:
        head = git("log", "-1", "--format=%h \"%s\"")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except OSError:
        return "?"
    if not head:
        return "?"
    if len(head) > 70:
        head = head[:67] + "...\""
    return head + (" + uncommitted changes" if dirty else "")


def describe():
    return {"date": time.strftime("%Y-%m-%d %H:%MZ", time.gmtime()), "machine": machine(), "source": source()}


def md_table(headers, rows):
    def cell(v):
        return str(v).replace("|", "\\|")
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("-" * (len(h) + 2) for h in headers) + "|"]
    for r in rows:
        out.append("| " + " | ".join(cell(v) for v in r) + " |")
    return "\n".join(out)


def quantile(xs, q):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def report_main(doc, load, report, plot):
    """A report script's command line: `runs... [--md FILE] [--png FILE]`.
    load(paths) -> runs; report(runs) -> Markdown (printed, and written to
    --md); plot(runs, png) draws --png."""
    import argparse
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--md")
    ap.add_argument("--png")
    args = ap.parse_args()
    runs = load(args.runs)
    text = report(runs)
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    if args.png:
        plot(runs, args.png)
