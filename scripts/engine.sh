#!/usr/bin/env bash
# Start a Docker-API engine on this machine (no Docker daemon, no Docker Hub): podman's
# Docker-compatible service with runc and cgroupfs (crun refuses this host's hybrid cgroups),
# listening on $IMPASSE_ENGINE_SOCK (default /run/impasse-podman.sock). Idempotent: installs
# the Debian packages once, starts the service once, returns when /_ping answers.
set -euo pipefail

SOCK="${IMPASSE_ENGINE_SOCK:-/run/impasse-podman.sock}"
CONF_DIR=/etc/impasse
CONF="$CONF_DIR/containers.conf"
LOG="${SOCK%.sock}.log"
PIDFILE="${SOCK%.sock}.pid"

ping_ok() { curl -sf --max-time 2 --unix-socket "$SOCK" http://engine/_ping >/dev/null 2>&1; }

if ping_ok; then echo "engine: already answering on $SOCK"; exit 0; fi

if [ "$(id -u)" != 0 ]; then
  echo "engine.sh: starting the engine needs root (apt-get, a rootful podman service)." >&2
  echo "Without root, point DOCKER_HOST at an existing Docker engine instead." >&2
  exit 2
fi

# One caller at a time past this point: a test suite's workers each run this script at once, and
# two of them installing packages, rewriting the config or removing each other's socket made one
# fail (its Docker tests then skipped). The others wait here, then find the engine answering.
exec 9>"/run/impasse-engine.lock"
flock 9
if ping_ok; then echo "engine: already answering on $SOCK"; exit 0; fi

need=()
for bin in podman:podman runc:runc mmdebstrap:mmdebstrap curl:curl newuidmap:uidmap slirp4netns:slirp4netns; do
  command -v "${bin%%:*}" >/dev/null 2>&1 || need+=("${bin##*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "engine: installing ${need[*]} from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

mkdir -p "$CONF_DIR"
# Our own config file (CONTAINERS_CONF), so the machine's /etc/containers stays untouched.
# Podman's default ulimits exceed this host's hard limits (setrlimit fails), so pin them.
cat > "$CONF.tmp" <<'CONFEOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONFEOF
mv "$CONF.tmp" "$CONF"

rm -f "$SOCK"
# conmon writes files such as `oom` (a process was OOM-killed) into its working directory, which it
# inherits from the service: give the service its own, never the caller's checkout.
mkdir -p /run/impasse-engine && cd /run/impasse-engine
CONTAINERS_CONF="$CONF" nohup setsid podman --runtime runc --cgroup-manager cgroupfs \
  system service --time=0 "unix://$SOCK" >"$LOG" 2>&1 < /dev/null 9>&- &  # the service must not hold the lock
echo $! > "$PIDFILE"

for _ in $(seq 1 100); do
  if ping_ok; then echo "engine: podman $(podman --version | awk '{print $3}') answering on $SOCK"; exit 0; fi
  sleep 0.1
done
echo "engine.sh: the podman service did not answer on $SOCK within 10 s; its log:" >&2
tail -n 20 "$LOG" >&2 || true
exit 1
