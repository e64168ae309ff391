#!/bin/bash
# Install the launchers the tests run for real: OpenMPI's mpirun and a single-node Slurm
# (slurmctld, slurmd, munge) from Debian's packages. Idempotent; a no-op when all are present.
# Exit status 0 when everything is there afterwards, 1 otherwise (tests then skip with a reason).
set -uo pipefail
have() {
  command -v mpirun >/dev/null && command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
    && command -v srun >/dev/null && command -v munged >/dev/null
}
have && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "launchers: not root or no apt-get: cannot install openmpi-bin and slurm" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends \
  openmpi-bin slurmctld slurmd slurm-client munge >/dev/null || exit 1
have
