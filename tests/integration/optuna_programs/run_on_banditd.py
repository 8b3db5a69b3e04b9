"""Runs an unchanged Optuna program on banditd: optuna.create_study and
optuna.load_study become banditd.optuna's (banditd.optuna.patch_optuna),
with the daemon's URL from BANDITD_URL and its token from the file
BANDITD_TOKEN_FILE; then the program runs as __main__ with the arguments
that follow it, as `python3 program.py args` would run it.

    BANDITD_URL=http://127.0.0.1:8080 BANDITD_TOKEN_FILE=banditd.db.admin-token \\
        python3 run_on_banditd.py program.py [args...]

Not a program of its own: tests/integration/test_optuna_programs.py runs
every other file here this way and as is."""

import os
import runpy
import sys

import banditd
import banditd.optuna


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    banditd.optuna.patch_optuna(os.environ["BANDITD_URL"], banditd.read_token(os.environ["BANDITD_TOKEN_FILE"]))
    program = os.path.abspath(sys.argv[1])
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(program)  # as when the program itself is run
    runpy.run_path(program, run_name="__main__")


if __name__ == "__main__":
    main()
