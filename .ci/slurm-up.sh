#!/bin/bash
# Start a private single-node Slurm cluster (+ munge) on localhost, for the tests. Idempotent.
# Adapted from the team's local-slurm recipe (what each step avoids is noted there):
#   - daemons started by hand (no systemd); munged as the munge user, socket dir 0711, key 0400;
#   - CPUs advertised beyond the real cores (config_overrides), EnforcePartLimits=ALL so an
#     impossible request fails at once instead of waiting forever;
#   - clients need SLURM_CONF pointing at the private config (printed on stdout).
# Everything lives under $SLURM_LOCAL_BASE (default /tmp/runsnap-slurm). Prints
# "export SLURM_CONF=..." then "ready"; exit 1 with a reason on stderr when it cannot.
set -euo pipefail
BASE=${SLURM_LOCAL_BASE:-/tmp/runsnap-slurm}
NCPUS=${SLURM_LOCAL_CPUS:-16}
H=$(hostname -s)
CONF=$BASE/etc/slurm.conf
export SLURM_CONF=$CONF
"$(dirname "$0")/launchers-install.sh" || { echo "slurm: packages missing" >&2; exit 1; }

alive() {  # alive PID COMM: PID exists, is not a zombie, and is named COMM
  local st; st=$(cut -d' ' -f3 /proc/"$1"/stat 2>/dev/null) || return 1
  [ -n "$st" ] && [ "$st" != Z ] && [ "$(cat /proc/"$1"/comm 2>/dev/null)" = "$2" ]
}
running() { [ -s "$1" ] && alive "$(cat "$1")" "$2"; }

mkdir -p "$BASE"/{etc,state,spool,log,run,tmp,munge}
chmod 0755 "$BASE"
if ! runuser -u munge -- test -x "$BASE/munge" 2>/dev/null && ! runuser -u munge -- test -x "$BASE"; then
  echo "slurm: the munge user cannot reach $BASE; set SLURM_LOCAL_BASE elsewhere" >&2
  exit 1
fi
chown munge:munge "$BASE/munge"; chmod 0711 "$BASE/munge"
[ -s "$BASE/munge/munge.key" ] || runuser -u munge -- mungekey --create --keyfile="$BASE/munge/munge.key"
chown munge:munge "$BASE/munge/munge.key"; chmod 0400 "$BASE/munge/munge.key"
MSOCK=$BASE/munge/munge.socket.2
if ! running "$BASE/munge/munged.pid" munged; then
  runuser -u munge -- munged --socket="$MSOCK" --key-file="$BASE/munge/munge.key" \
    --log-file="$BASE/munge/munged.log" --pid-file="$BASE/munge/munged.pid" \
    --seed-file="$BASE/munge/munged.seed"
fi
for _ in $(seq 50); do munge -S "$MSOCK" -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done

CTLD_UP=0; SLURMD_UP=0
running "$BASE/run/slurmctld.pid" slurmctld && CTLD_UP=1
running "$BASE/run/slurmd.pid" slurmd && SLURMD_UP=1
if [ $CTLD_UP = 0 ] && [ $SLURMD_UP = 0 ]; then
cat > "$CONF" <<CONFEOF
ClusterName=runsnaptest
SlurmctldHost=$H(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MSOCK
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool
TmpFS=$BASE/tmp
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd.log
SlurmctldPort=${SLURM_LOCAL_CTLD_PORT:-6817}
SlurmdPort=${SLURM_LOCAL_SLURMD_PORT:-6818}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
EnforcePartLimits=ALL
SlurmdParameters=config_overrides
NodeName=$H NodeAddr=127.0.0.1 CPUs=$NCPUS Boards=1 SocketsPerBoard=1 CoresPerSocket=$NCPUS ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONFEOF
fi
[ $CTLD_UP = 1 ] || slurmctld -c -f "$CONF"
[ $SLURMD_UP = 1 ] || slurmd -f "$CONF"

for _ in $(seq 120); do
  st=$(sinfo -h -N -n "$H" -o %T 2>/dev/null || true)
  case "$st" in
    idle|mixed|allocated) echo "export SLURM_CONF=$CONF"; echo ready; exit 0 ;;
    down*|drain*) scontrol update nodename="$H" state=resume 2>/dev/null || true ;;
  esac
  sleep 0.25
done
echo "slurm: node not idle (state: ${st:-?}); see $BASE/log" >&2
exit 1
