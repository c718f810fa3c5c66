#!/usr/bin/env bash
# Launcher check: a one-node Slurm cluster on this machine (munge, slurmctld, slurmd from the
# distro packages), then `srun --mpi=pmix -n 2` of layerbench-coll and layerbench-moe on the
# host backend at a small geometry, each result file checked. Needs root (daemons).
# usage: tests/launchers/slurm_check.sh BUILD_DIR   (exit 0 pass, 1 fail, 77 skipped: no Slurm)
set -euo pipefail
build=$(cd "${1:?usage: slurm_check.sh BUILD_DIR}" && pwd)
for tool in slurmctld slurmd munged srun; do
  command -v "$tool" >/dev/null || { echo "slurm_check: $tool not installed: skipped"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "slurm_check: needs root to start the daemons: skipped"; exit 77; }

work=$(mktemp -d /tmp/lb-slurm.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

host=$(hostname -s)
cpus=$(nproc)
mem=$(awk '/MemTotal/ {print int($2 / 1024 / 2)}' /proc/meminfo)
mkdir -p "$work"/{state,spool,log,munge}
export SLURM_CONF=$work/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=layerbench
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
SlurmctldPort=26817
SlurmdPort=26818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE
CONF

# munge: a key of its own and a private socket.
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
sock=$work/munge/munge.socket
munged --force --key-file "$work/munge/munge.key" --socket "$sock" \
  --pid-file "$work/munge/munged.pid" --log-file "$work/log/munged.log" \
  --seed-file "$work/munge/seed"
# Slurm's munge plugins read the socket from the config.
sed -i "s|^AuthType=auth/munge|AuthType=auth/munge\nAuthInfo=socket=$sock|" "$SLURM_CONF"
sed -i "s|^CredType=cred/munge|CredType=cred/munge|" "$SLURM_CONF"
pids+=("$(cat "$work/munge/munged.pid")")

slurmctld -D -i -f "$SLURM_CONF" > "$work/log/slurmctld.out" 2>&1 & pids+=($!)
slurmd -D -f "$SLURM_CONF" > "$work/log/slurmd.out" 2>&1 & pids+=($!)
for _ in $(seq 60); do
  sinfo -h -o %T 2>/dev/null | grep -qE '^idle' && break
  sleep 1
done
if ! sinfo -h -o %T 2>/dev/null | grep -qE '^idle'; then
  echo "slurm_check: the node did not come up"; tail -20 "$work"/log/*; exit 1
fi

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail=0
run() {  # name, then the command
  local name=$1; shift
  if timeout 300 srun --mpi=pmix -n 2 --overcommit "$@" > "$work/$name.log" 2>&1; then
    echo "slurm_check: $name: ok"
  else
    echo "slurm_check: $name: FAILED"; tail -20 "$work/$name.log"; fail=1
  fi
}
run coll "$build/bench/coll/layerbench-coll" --backend host --ops all_gather,all_reduce \
  -b 1K -e 64K -f 4 --iterations 5 --warmup 1 --json "$work/coll.json"
run moe "$build/bench/moe/layerbench-moe" --backend host --tokens 64 --hidden 256 --moe-heads 4 \
  --experts 8 --topk 2 --intermediate 64 --iterations 3 --warmup 1 --json "$work/moe.json"
for f in coll moe; do
  if [ -s "$work/$f.json" ] && python3 - "$work/$f.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["complete"] is True, "incomplete"
assert d["context"]["world_size"] == 2, "world size %s" % d["context"]["world_size"]
assert d.get("total_wrong", 0) == 0, "data check failed"
res = d["results"]
assert res, "no results"
for r in res:
    assert len(r["samples_ms"]) == r["n"] > 0, r["name"]
PY
  then echo "slurm_check: $f.json: results read back"
  else echo "slurm_check: $f.json: missing or unreadable"; fail=1
  fi
done
exit $fail
