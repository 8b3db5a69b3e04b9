#!/bin/sh
# Runs the installed systemd unit under a real systemd: boots a Debian 12 tree
# (debootstrap) with systemd-nspawn, banditd installed into it by
# `cmake --install` (so the unit is the one users get), and checks from inside
# that banditd.service starts at boot in its sandbox (a dynamic user, no
# capabilities, no new privileges, the seccomp filter, LimitNOFILE), writes
# the admin token into its StateDirectory, serves /healthz and a study,
# stops cleanly on `systemctl stop` (exit status 0), keeps its data across a
# restart, and is restarted after a crash (Restart=on-failure).
#
# The checks (verify-systemd-inside.sh) run in the container as a oneshot
# unit after banditd.service; they write what they saw to a bind-mounted
# directory and power the container off. Needs root, systemd-container and
# debootstrap (installed when missing) and Debian's archive; not part of
# tests/run-all.sh (minutes, privileged).
#   docker/verify-systemd.sh [BUILD_DIR]   # default build/, already built
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
work=${BD_VERIFY_DIR:-/tmp/banditd-verify}
root=$work/systemd-root
out=$work/systemd-out

[ -x "$build/banditd" ] || { echo "no $build/banditd: build first: cmake -S . -B build && cmake --build build" >&2; exit 1; }
need=""
for tool in systemd-nspawn:systemd-container debootstrap:debootstrap; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need="$need ${tool#*:}"
done
if [ -n "$need" ]; then
  echo "== installing$need"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need
fi

if [ ! -x "$root/lib/systemd/systemd" ]; then
  mirror=$(sed -n 's/^URIs: *//p; s/^deb \(\[[^]]*\] \)\{0,1\}\(http[^ ]*\) bookworm .*/\2/p' \
             /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v security | head -n1)
  mirror=${mirror:-http://deb.debian.org/debian}
  echo "== debootstrap bookworm with systemd and banditd's libraries from $mirror"
  rm -rf "$root"
  mkdir -p "$work"
  debootstrap --variant=minbase \
    --include=systemd-sysv,libmicrohttpd12,libjansson4,libsqlite3-0,libgsl27,libgslcblas0,libsodium23,curl \
    bookworm "$root" "$mirror" >"$work/debootstrap-systemd.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap-systemd.log"; exit 1; }
fi

echo "== cmake --install $build into the tree (prefix /usr/local)"
rm -rf "$root/var/lib/private/banditd" "$root/var/lib/banditd"
DESTDIR="$root" cmake --install "$build" --prefix /usr/local >"$work/install-systemd.log"
grep '^ExecStart=' "$root/usr/local/lib/systemd/system/banditd.service"
systemctl --root="$root" enable banditd.service

install -m 755 docker/verify-systemd-inside.sh "$root/usr/local/sbin/verify-systemd-inside"
cat >"$root/etc/systemd/system/banditd-verify.service" <<'UNIT'
[Unit]
Description=checks banditd.service from inside (docker/verify-systemd.sh)
After=banditd.service
Wants=banditd.service

[Service]
Type=oneshot
ExecStart=/usr/local/sbin/verify-systemd-inside
StandardOutput=journal+console

[Install]
WantedBy=multi-user.target
UNIT
systemctl --root="$root" enable banditd-verify.service
rm -rf "$out"
mkdir -p "$out"

echo "== systemd-nspawn --boot"
# --register=no --keep-unit: no systemd-machined and no systemd to make a
# scope unit here (PID 1 need not be systemd);
# --private-network: the container's port 8080 is its own.
timeout 300 systemd-nspawn --quiet --boot --register=no --keep-unit --private-network --console=pipe \
  --directory="$root" --machine=bd-verify-systemd --bind="$out:/verify-out" </dev/null \
  >"$work/nspawn-console.log" 2>&1 || echo "(systemd-nspawn exited with status $?)"
# (systemd shows no boot status on a pipe; this is nspawn's own messages)
cat "$work/nspawn-console.log"

echo "== what the checks inside saw"
cat "$out/inside.log" 2>/dev/null || { echo "no report: the container did not get as far (console log above)" >&2; exit 1; }
test "$(cat "$out/result" 2>/dev/null)" = ok || { echo "the checks inside failed" >&2; exit 1; }
echo "== banditd.service verified under systemd"
