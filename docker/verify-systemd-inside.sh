#!/bin/sh
# Runs inside the container docker/verify-systemd.sh boots, as a oneshot unit
# after banditd.service: checks the service as systemd runs it, writes the
# report to /verify-out/inside.log and "ok" or "failed" to
# /verify-out/result, then powers the container off.
exec >/verify-out/inside.log 2>&1
url=http://127.0.0.1:8080
result=failed

finish() {
  echo "$result" >/verify-out/result
  echo "== banditd's journal"
  journalctl -b -u banditd --no-pager -o short-monotonic | grep -v "Sending signal SIGKILL to process" | tail -n 40
  systemctl --no-block --check-inhibitors=no poweroff
  exit 0
}
fail() {
  echo "FAIL: $*"
  finish
}

wait_healthy() {
  i=0
  until curl -fsS "$url/healthz" >/dev/null 2>&1; do
    i=$((i + 1))
    [ "$i" -le 150 ] || return 1
    sleep 0.2
  done
}

prop() { systemctl show -p "$1" --value banditd; }

echo "== started at boot"
systemctl is-enabled banditd || fail "not enabled"
wait_healthy || fail "no answer on $url/healthz: $(systemctl status banditd --no-pager)"
systemctl is-active banditd || fail "not active"
curl -fsS "$url/healthz" && echo
pid=$(prop MainPID)
echo "MainPID=$pid"

echo "== its sandbox, from /proc/$pid"
grep -E '^(Uid|Gid|CapEff|CapBnd|NoNewPrivs|Seccomp):' "/proc/$pid/status"
uid=$(awk '/^Uid:/ {print $2}' "/proc/$pid/status")
[ "$uid" -ge 61184 ] && [ "$uid" -le 65519 ] || fail "uid $uid is not a dynamic user's (61184-65519)"
grep -q '^CapEff:[[:space:]]*0000000000000000$' "/proc/$pid/status" || fail "has capabilities"
grep -q '^NoNewPrivs:[[:space:]]*1$' "/proc/$pid/status" || fail "NoNewPrivileges is off"
grep -q '^Seccomp:[[:space:]]*2$' "/proc/$pid/status" || fail "no seccomp filter"
# LimitNOFILE=65536, or the hard limit systemd itself got when that is lower
# (a host that withholds CAP_SYS_RESOURCE cannot raise it)
grep 'Max open files' /proc/1/limits "/proc/$pid/limits"
want=$(awk '/^Max open files/ {print ($5 < 65536 ? $5 : 65536)}' /proc/1/limits)
grep -q "Max open files *$want *$want " "/proc/$pid/limits" || fail "LimitNOFILE: not $want"

echo "== the state directory and the admin token"
ls -ln /var/lib/private/banditd
ls -ld /var/lib/banditd
mode=$(stat -c '%a %u' /var/lib/private/banditd/banditd.db.admin-token) || fail "no admin token file"
[ "$mode" = "600 $uid" ] || fail "token file mode and owner: $mode"
token=$(cat /var/lib/banditd/banditd.db.admin-token)
study=$(curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$url/v1/studies" \
  -d '{"name": "systemd", "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
       "objective": {"metric": "loss", "goal": "minimize"}, "scheduler": {"name": "random", "options": {}}}') \
  || fail "could not create a study"
echo "$study"
curl -fsS -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$url/v1/studies/1/suggest" \
  -d '{"worker": "w1", "count": 1}' || fail "suggest"
echo

echo "== systemctl stop: SIGTERM, a clean exit"
systemctl stop banditd
echo "ActiveState=$(prop ActiveState) Result=$(prop Result) ExecMainCode=$(prop ExecMainCode) ExecMainStatus=$(prop ExecMainStatus)"
[ "$(prop Result)" = success ] && [ "$(prop ExecMainStatus)" = 0 ] || fail "did not stop cleanly"

echo "== systemctl start: the study is still there"
systemctl start banditd
wait_healthy || fail "no answer after a restart"
curl -fsS -H "Authorization: Bearer $token" "$url/v1/studies/1" | grep -q '"name":"systemd"' \
  || fail "the study did not survive the restart"
echo "study 1 is back"

echo "== a crash (SIGKILL): Restart=on-failure starts it again"
old=$(prop MainPID)
systemctl kill -s KILL banditd
i=0
until [ "$(prop ActiveState)" = active ] && [ "$(prop MainPID)" != "$old" ] && [ "$(prop MainPID)" != 0 ]; do
  i=$((i + 1))
  [ "$i" -le 100 ] || fail "not restarted: $(systemctl status banditd --no-pager)"
  sleep 0.1
done
wait_healthy || fail "no answer after the automatic restart"
echo "restarted: MainPID $old -> $(prop MainPID), NRestarts=$(prop NRestarts)"

result=ok
finish
