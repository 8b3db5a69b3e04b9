# load_lib.sh: shell helpers shared by the load benchmarks (run_load.sh,
# run_load_pg.sh); sourced, never run. Needs $PY (a python3) for free_port.

free_port() {
    "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# field KEY FILE [PREFIX]: the value of KEY= on the file's last line starting
# with PREFIX (default "RESULT "); a file name of "-" reads the line from $LINE.
field() {
    if [ "$2" = - ]; then
        printf '%s\n' "$LINE"
    else
        grep "^${3:-RESULT }" "$2" | tail -n 1
    fi | tr ' ' '\n' | sed -n "s/^$1=//p"
}

# CPU ticks (user + system) used so far by a process.
cpu_ticks() {
    awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0
}
