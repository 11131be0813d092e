#!/usr/bin/env bash
# Start dockerd in the background if no daemon answers, and wait until it does.
# Idempotent; prints nothing when a daemon already answers.
set -euo pipefail
if docker info >/dev/null 2>&1; then exit 0; fi
if ! command -v dockerd >/dev/null 2>&1; then
  echo "start_docker: dockerd is not installed (run packaging/system_deps.sh as root)" >&2
  exit 1
fi
if [ "$(id -u)" != "0" ]; then
  echo "start_docker: no Docker daemon answers and starting one needs root" >&2
  exit 1
fi
log=${DOCKERD_LOG:-/var/log/dynadesk-dockerd.log}
echo "start_docker: starting dockerd (log: $log)" >&2
setsid nohup dockerd >"$log" 2>&1 < /dev/null &
for _ in $(seq 1 120); do
  if docker info >/dev/null 2>&1; then exit 0; fi
  sleep 0.5
done
echo "start_docker: dockerd did not answer within 60 s; last log lines:" >&2
tail -20 "$log" >&2
exit 1
