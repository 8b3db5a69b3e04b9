#!/bin/sh
# Builds the container image with podman and checks that it serves: the
# runtime stage has every library banditd links, /healthz answers, the admin
# token supplied as a secret authenticates and creates a study, a generated
# token can be read out of the volume, the HEALTHCHECK turns the container
# healthy (and unhealthy while the daemon is stopped), and a bind-mounted host directory the
# container's user cannot write gets the entrypoint's explanation (and works
# with --user). Needs root (or a working rootless podman) and Debian's
# archive; not part of tests/run-all.sh (minutes, and privileged).
#   docker/verify-image.sh            # work files in /tmp/banditd-verify
#   BD_VERIFY_DIR=... BD_VERIFY_PORT=18080 docker/verify-image.sh
# Without a debian:12-slim image it makes one from Debian's archive with
# debootstrap (the mirror apt uses). Where crun cannot start containers (a
# cgroup v1/v2 hybrid), it falls back to runc with explicit rlimits.
set -eu
cd "$(dirname "$0")/.."
work=${BD_VERIFY_DIR:-/tmp/banditd-verify}
port=${BD_VERIFY_PORT:-18080}
tag=banditd-verify
mkdir -p "$work"

need=""
for tool in podman:podman buildah:buildah debootstrap:debootstrap runc:runc curl:curl; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need="$need ${tool#*:}"
done
if [ -n "$need" ]; then
  echo "== installing$need"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $need
fi

if ! podman image exists debian:12-slim; then
  mirror=$(sed -n 's/^URIs: *//p; s/^deb \(\[[^]]*\] \)\{0,1\}\(http[^ ]*\) bookworm .*/\2/p' \
             /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -v security | head -n1)
  mirror=${mirror:-http://deb.debian.org/debian}
  echo "== debootstrap bookworm from $mirror, imported as debian:12-slim"
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log"; exit 1; }
  tar -C "$work/rootfs" -c . | podman import - debian:12-slim
fi

echo "== podman build (chroot isolation: no OCI runtime needed while building)"
podman build --pull=never --isolation chroot --format docker -f docker/Dockerfile -t "$tag" .

run_opts=""
if ! podman run --rm --pull=never debian:12-slim true 2>"$work/run-probe.log"; then
  echo "== the default runtime cannot start a container here:"
  cat "$work/run-probe.log"
  run_opts="--runtime runc --ulimit nofile=$(ulimit -Hn):$(ulimit -Hn) --ulimit nproc=1024:1024"
  echo "== using: $run_opts"
  podman run $run_opts --rm --pull=never debian:12-slim true
fi

cleanup() { # one name per call: podman rm stops at the first name it does not know
  for c in bd-verify bd-verify-gen bd-verify-bind; do podman rm -f "$c" >/dev/null 2>&1 || true; done
  for v in bd-verify-data bd-verify-gen; do podman volume rm -f "$v" >/dev/null 2>&1 || true; done
  podman secret rm banditd_admin_token_verify >/dev/null 2>&1 || true
}
cleanup
trap cleanup EXIT

echo "== every library banditd links is in the runtime stage"
podman run $run_opts --rm --pull=never --entrypoint ldd "$tag" /usr/local/bin/banditd | tee "$work/ldd.txt"
if grep -q 'not found' "$work/ldd.txt"; then
  echo "missing libraries in the runtime stage" >&2
  exit 1
fi

wait_healthy() { # port
  i=0
  until curl -fsS "http://127.0.0.1:$1/healthz" >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 100 ]; then
      echo "no answer on port $1" >&2
      return 1
    fi
    sleep 0.2
  done
}

create_study() { # port token
  curl -fsS -H "Authorization: Bearer $2" -H 'Content-Type: application/json' "http://127.0.0.1:$1/v1/studies" \
    -d '{"name": "verify", "parameters": [{"name": "x", "type": "float", "low": 0, "high": 1}],
         "objective": {"metric": "loss", "goal": "minimize"},
         "scheduler": {"name": "random", "options": {"max_trials": 5}}, "seed": 1}'
  echo
}

echo "== the admin token from a secret (as compose.yaml gives it)"
install -d -m 700 "$work/secrets"
token="bdt_1_$(od -An -vtx1 -N32 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$token" >"$work/secrets/banditd_admin_token"
chmod 600 "$work/secrets/banditd_admin_token"
podman secret create banditd_admin_token_verify "$work/secrets/banditd_admin_token" >/dev/null
podman volume create bd-verify-data >/dev/null
podman run $run_opts -d --name bd-verify -p "127.0.0.1:$port:8080" -v bd-verify-data:/var/lib/banditd \
  --secret banditd_admin_token_verify,target=banditd_admin_token,uid=10001,mode=0400 \
  -e BANDITD_ADMIN_TOKEN_FILE=/run/secrets/banditd_admin_token "$tag" >/dev/null
wait_healthy "$port" || { podman logs bd-verify; exit 1; }
curl -fsS "http://127.0.0.1:$port/healthz"; echo

echo "== the image's HEALTHCHECK, run by podman: healthy, unhealthy while the daemon is stopped, healthy again"
# podman runs HEALTHCHECK from systemd timers, which need systemd as PID 1 on
# the host; \`podman healthcheck run\` runs the same check and records its result.
health() { podman inspect --format '{{.State.Health.Status}}' bd-verify; }
podman inspect --format '{{.Config.Healthcheck.Test}}' bd-verify
echo "before any check: $(health)"
podman healthcheck run bd-verify
test "$(health)" = healthy || { echo "health is $(health) after a passing check" >&2; exit 1; }
echo "after a passing check: $(health)"
podman kill --signal STOP bd-verify >/dev/null
for i in 1 2 3; do # the default --health-retries: three failures in a row make it unhealthy
  if podman healthcheck run bd-verify; then
    echo "the check passed while the daemon was stopped" >&2
    exit 1
  fi
done
status=$(health)
podman kill --signal CONT bd-verify >/dev/null
test "$status" = unhealthy || { echo "health is $status after three failed checks" >&2; exit 1; }
echo "after three failed checks (SIGSTOP): $status"
podman healthcheck run bd-verify
test "$(health)" = healthy || { echo "health is $(health) after SIGCONT" >&2; exit 1; }
echo "after SIGCONT: $(health)"
create_study "$port" "$token"
curl -fsS -H "Authorization: Bearer $token" "http://127.0.0.1:$port/v1/me"; echo
podman logs bd-verify 2>&1 | tee "$work/secret-run.log"
if grep -q "${token#bdt_1_}" "$work/secret-run.log"; then
  echo "the token is in the log" >&2
  exit 1
fi
podman exec bd-verify sh -c 'id; ls -ln /var/lib/banditd'
podman rm -f bd-verify >/dev/null

echo "== a generated token, read out of the volume"
podman volume create bd-verify-gen >/dev/null
podman run $run_opts -d --name bd-verify-gen -p "127.0.0.1:$port:8080" -v bd-verify-gen:/var/lib/banditd \
  "$tag" >/dev/null
wait_healthy "$port" || { podman logs bd-verify-gen; exit 1; }
gen=$(podman run $run_opts --rm --pull=never -v bd-verify-gen:/var/lib/banditd debian:12-slim \
  cat /var/lib/banditd/banditd.db.admin-token)
create_study "$port" "$gen"
podman rm -f bd-verify-gen >/dev/null

echo "== a host directory bind-mounted: refused with advice as uid 10001, served with --user"
rm -rf "$work/data"
install -d -m 755 "$work/data"
if podman run $run_opts --rm --name bd-verify-bind -v "$work/data:/var/lib/banditd" "$tag" \
     >"$work/bind.log" 2>&1; then
  echo "the container started on a directory it cannot write" >&2
  exit 1
fi
cat "$work/bind.log"
grep -q -- '--user' "$work/bind.log"
podman run $run_opts -d --name bd-verify-bind --user "$(id -u):$(id -g)" -p "127.0.0.1:$port:8080" \
  -v "$work/data:/var/lib/banditd" "$tag" >/dev/null
wait_healthy "$port" || { podman logs bd-verify-bind; exit 1; }
create_study "$port" "$(cat "$work/data/banditd.db.admin-token")"
ls -ln "$work/data"
echo "== image verified"
