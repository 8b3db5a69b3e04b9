"""banditd.cli_input: reads a study definition for `bdctl create` from a JSON
or YAML file (or '-' for standard input).

JSON is parsed by the standard library. YAML needs PyYAML, Debian's
python3-yaml; without it a YAML file is refused with a message naming the
package. YAML is read with SafeLoader (no Python objects), extended to take
YAML 1.2 floats such as `1e-4`, which YAML 1.1 (PyYAML) would read as a
string and the daemon would then refuse as "must be a number". Whatever is
read must be a JSON object with JSON values only: a YAML date or a
non-string key is an error here, not a surprise at the daemon.
"""

import json
import math
import re
import sys

MAX_FILE_BYTES = 16 << 20  # far above the daemon's body limit; refuses /dev/zero


class InputError(Exception):
    """A study file that cannot be read or is not a JSON object."""


def _read(path):
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_FILE_BYTES + 1)
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_FILE_BYTES + 1)
    except OSError as e:
        raise InputError("cannot read %s: %s" % (path, e.strerror or e))
    if len(data) > MAX_FILE_BYTES:
        raise InputError("%s is larger than %d MiB" % (path, MAX_FILE_BYTES >> 20))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("%s is not UTF-8 text (byte %d)" % (path, e.start))


def _yaml_loader():
    try:
        import yaml
    except ImportError:
        raise InputError("reading YAML needs PyYAML: install Debian's python3-yaml "
                         "(apt-get install python3-yaml), or give the study as JSON")

    class Loader(yaml.SafeLoader):
        pass
    # YAML 1.2 floats: 1e-4, -2E+3, .5 (YAML 1.1 wants 1.0e-4).
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)(?:[eE][-+]?[0-9]+)?$"
                   r"|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"),
        list("-+0123456789."))
    return yaml, Loader


def _check_json(v, where):
    """Raises InputError unless v holds only JSON values (finite numbers)."""
    if v is None or isinstance(v, (bool, str, int)):
        return
    if isinstance(v, float):
        if not math.isfinite(v):
            raise InputError("%s: %r is not a finite number" % (where, v))
        return
    if isinstance(v, list):
        for i, x in enumerate(v):
            _check_json(x, "%s[%d]" % (where, i))
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if not isinstance(k, str):
                raise InputError("%s: key %r is not a string" % (where, k))
            _check_json(x, "%s.%s" % (where, k) if where else k)
        return
    raise InputError("%s: a %s is not a JSON value (quote it)" % (where or "top level", type(v).__name__))


def is_yaml(path):
    return path.lower().endswith((".yaml", ".yml"))


def load_study(path):
    """Returns the study definition (a dict) in path: YAML if the name ends in
    .yaml/.yml, JSON otherwise. Raises InputError with the file and the place."""
    text = _read(path)
    if is_yaml(path):
        yaml, loader = _yaml_loader()
        try:
            doc = yaml.load(text, Loader=loader)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = " at line %d column %d" % (mark.line + 1, mark.column + 1) if mark else ""
            problem = getattr(e, "problem", None) or str(e)
            raise InputError("%s is not valid YAML%s: %s" % (path, where, problem))
    else:
        def bad_constant(tok):
            raise ValueError("%s is not a JSON number" % tok)
        try:
            doc = json.loads(text, parse_constant=bad_constant)
        except json.JSONDecodeError as e:
            raise InputError("%s is not valid JSON at line %d column %d: %s" % (path, e.lineno, e.colno, e.msg))
        except ValueError as e:
            raise InputError("%s is not valid JSON: %s" % (path, e))
    if not isinstance(doc, dict):
        raise InputError("%s must hold one object (name, parameters, scheduler, ...), not %s"
                         % (path, "nothing" if doc is None else "a " + type(doc).__name__))
    _check_json(doc, "")
    return doc
