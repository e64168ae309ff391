#!/bin/bash
# Stop the cluster .ci/slurm-up.sh started: cancel its jobs, then stop exactly the daemons in
# its pid files (never by name).
set -uo pipefail
BASE=${SLURM_LOCAL_BASE:-/tmp/runsnap-slurm}
export SLURM_CONF=$BASE/etc/slurm.conf
alive() {
  local st; st=$(cut -d' ' -f3 /proc/"$1"/stat 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$(cat /proc/"$1"/comm 2>/dev/null)" = "$2" ]
}
stop() {  # stop PIDFILE COMM
  local pf=$1 comm=$2 pid
  [ -s "$pf" ] || return 0
  pid=$(cat "$pf")
  if alive "$pid" "$comm"; then
    kill -TERM "$pid"
    for _ in $(seq 100); do alive "$pid" "$comm" || break; sleep 0.1; done
    alive "$pid" "$comm" && kill -KILL "$pid"
  fi
  rm -f "$pf"
}
if [ -s "$BASE/run/slurmctld.pid" ] && command -v squeue >/dev/null; then
  jobs=$(squeue -h -o %i 2>/dev/null || true)
  if [ -n "$jobs" ]; then scancel $jobs 2>/dev/null || true; sleep 1; fi
fi
stop "$BASE/run/slurmd.pid" slurmd
stop "$BASE/run/slurmctld.pid" slurmctld
stop "$BASE/munge/munged.pid" munged
# Two test sessions starting the cluster at once can each start a daemon, and the pid file keeps
# only the last: stop any other daemon started with this cluster's own files (by its pid).
for d in /proc/[0-9]*; do
  comm=$(cat "$d/comm" 2>/dev/null) || continue
  case "$comm" in slurmd|slurmctld|munged) ;; *) continue ;; esac
  if tr '\0' ' ' < "$d/cmdline" 2>/dev/null | grep -qF -- "$BASE/"; then
    pid=${d#/proc/}
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do alive "$pid" "$comm" || break; sleep 0.1; done
    alive "$pid" "$comm" && kill -KILL "$pid" 2>/dev/null
  fi
done
exit 0
