#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for trying the shard array job
# and for tests/slurm.rs: munge, slurmctld and slurmd from Debian's packages
# (slurmctld slurmd slurm-client munge), node "localhost" with this machine's
# CPUs, one partition. Run as root. Idempotent: daemons already up are left
# alone, and a slurm.conf that this script did not write is never touched
# (a real cluster's configuration stays a real cluster's).
#
#   scripts/slurm/local-cluster.sh          # bring it up (or check it is up)
#   scripts/slurm/local-cluster.sh stop     # stop the daemons it started
set -euo pipefail

conf=/etc/slurm/slurm.conf
marker="# written by markbench scripts/slurm/local-cluster.sh"
run=/run/markbench-slurm
mkdir -p "$run"

pid_alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

if [[ ${1:-} == stop ]]; then
  for p in "$run/slurmd.pid" "$run/slurmctld.pid" "$run/munged.pid"; do
    if pid_alive "$p"; then kill "$(cat "$p")"; fi
  done
  exit 0
fi

for tool in munged slurmctld slurmd sbatch; do
  command -v "$tool" >/dev/null || {
    echo "local-cluster: $tool is missing: apt-get install -y slurmctld slurmd slurm-client munge" >&2
    exit 1
  }
done
[[ $(id -u) == 0 ]] || { echo "local-cluster: run as root" >&2; exit 1; }

# munge: the key Debian's package generated, or a new one.
if [[ ! -s /etc/munge/munge.key ]]; then
  mungekey --create --keyfile=/etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key
chmod 600 /etc/munge/munge.key
install -d -o munge -g munge -m 0755 /run/munge
install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  runuser -u munge -- munged
  for _ in $(seq 50); do
    munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
    sleep 0.1
  done
  # munged keeps its pid file where user munge may write; note it where stop looks.
  cp /run/munge/munged.pid "$run/munged.pid" 2>/dev/null || true
fi

cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
if [[ -e $conf ]] && ! grep -qF "$marker" "$conf"; then
  echo "local-cluster: $conf exists and is not ours; using it as it is" >&2
else
  want=$(cat <<EOF
$marker
ClusterName=markbench
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
# No cgroups in containers: plain process tracking, no task binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
# Jobs of a benchmark take minutes; nothing here should be killed for idling.
InactiveLimit=0
KillWait=30
MinJobAge=300
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
)
  if [[ ! -e $conf ]] || [[ $(cat "$conf") != "$want" ]]; then
    printf '%s\n' "$want" >"$conf"
    # A changed configuration needs the daemons to read it again.
    for p in "$run/slurmd.pid" "$run/slurmctld.pid"; do
      if pid_alive "$p"; then kill "$(cat "$p")"; sleep 1; fi
    done
  fi
fi
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm

pid_alive "$run/slurmctld.pid" || slurmctld
pid_alive "$run/slurmd.pid" || slurmd -N localhost

# Wait for the node to register; bring it back if an earlier run left it down.
for _ in $(seq 60); do
  state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
  case $state in
    idle* | mixed* | allocated*) break ;;
    down* | drain*) scontrol update nodename=localhost state=resume || true ;;
  esac
  sleep 1
done
state=$(sinfo -h -n localhost -o %T 2>/dev/null || true)
case $state in
  idle* | mixed* | allocated*) echo "local-cluster: up (node localhost $state, $cpus CPUs)" ;;
  *)
    echo "local-cluster: node localhost is ${state:-unknown}; see /var/log/slurm/" >&2
    exit 1
    ;;
esac
