#!/usr/bin/env bash
# The real systems beside a suite run: bench/real/run.py on the suite run's layouts, schedules, K,
# dtypes, world size, warm-up and measured steps, one process per system. See --help.
set -euo pipefail

SA_PROG=run_real.sh
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<'EOF'
usage: scripts/run_real.sh [--systems fsdp2,fsdp1] [--bench PATH] RUN.json OUT_DIR

Runs the real systems (bench/real/run.py: PyTorch FSDP2 and FSDP1; DeepSpeed ZeRO-3 and ZeRO-2 when
asked, --systems zero3,zero2) on the workload of a suite run: its models, world size, K, schedules,
dtypes, seed, warm-up and measured steps (read from RUN.json's context and case names), with CPU
offload on and off (--offload cpu,none; DeepSpeed also cpu-pageable, pin_memory false; it runs only
S^K and n^(K-1)S and skips the other schedules, saying why), so that report.py can put
every real case beside the preset that names its system. One process per system (torch starts in
10-20 s), under torchrun when the world size is above 1. Writes OUT_DIR/real-SYSTEM.json (Google
Benchmark JSON) and OUT_DIR/real-SYSTEM.log.

options:
  --systems LIST  the systems to run: fsdp2, fsdp1, zero3, zero2 (default fsdp2,fsdp1)
  --bench PATH    shardaccum_bench, for --describe-layout (default build/bench/shardaccum_bench)
  -h, --help      this text

environment: SHARDACCUM_TORCH_PYTHON=PATH is the Python with a CUDA torch (default python3). For
zero3/zero2 without DeepSpeed there, .deps/deepspeed/site (scripts/prepare_deepspeed_deps.sh) is put
on PYTHONPATH.
NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 are always exported.

exit status: 0 every system's JSON written; 1 a system failed (the others' JSON are kept);
2 bad arguments; 3 no Python with a CUDA torch here (nothing run).
EOF
}

systems=fsdp2,fsdp1
bench="$SA_BENCH"
args=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --systems) [[ $# -ge 2 ]] || SA_DIE_CODE=2 sa_die "--systems needs a value (e.g. fsdp2,fsdp1)"; systems=$2; shift 2 ;;
    --systems=*) systems=${1#--systems=}; shift ;;
    --bench) [[ $# -ge 2 ]] || SA_DIE_CODE=2 sa_die "--bench needs the path of shardaccum_bench"; bench=$2; shift 2 ;;
    --bench=*) bench=${1#--bench=}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) SA_DIE_CODE=2 sa_die "unknown option '$1' (see --help)" ;;
    *) args+=("$1"); shift ;;
  esac
done
[[ ${#args[@]} -eq 2 ]] || SA_DIE_CODE=2 sa_die "give RUN.json and OUT_DIR (see --help)"
run_json=${args[0]}
out_dir=${args[1]}
[[ -s "$run_json" ]] || SA_DIE_CODE=2 sa_die "RUN.json '$run_json' is missing or empty"
[[ -x "$bench" ]] || SA_DIE_CODE=2 sa_die "--bench '$bench' is not an executable shardaccum_bench (build it first)"

# The suite run's workload: one line of shell words per setting.
IFS=, read -r -a system_list <<<"$systems"
for system in "${system_list[@]}"; do
  [[ "$system" =~ ^(fsdp2|fsdp1|zero3|zero2)$ ]] \
    || SA_DIE_CODE=2 sa_die "--systems: '$system' is not fsdp2, fsdp1, zero3 or zero2"
done
# The suite run's workload, one line of shell words per setting (any python3: no torch needed here).
settings=$(python3 - "$run_json" <<'PYEOF'
import json, shlex, sys
try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    sys.exit(f"run_real.sh: error: RUN.json '{sys.argv[1]}' is not readable JSON ({e})")
ctx = doc.get("context") if isinstance(doc, dict) else None
names = [b.get("name", "") for b in doc.get("benchmarks", []) if isinstance(b, dict)] if isinstance(doc, dict) else []
if not isinstance(ctx, dict) or not any(n.startswith("accum/") for n in names):
    sys.exit(f"run_real.sh: error: RUN.json '{sys.argv[1]}' is not a suite run of shardaccum_bench "
             "(no context or no accum/ case); give the run.json of scripts/run.sh")
parts = {"schedule": [], "dtype": []}
for b in doc.get("benchmarks", []):
    for p in b.get("name", "").split("/"):
        key, _, value = p.partition(":")
        if key in parts and value and value not in parts[key]:
            parts[key].append(value)
def out(name, value):
    print(f"{name}={shlex.quote(str(value))}")
out("models", ctx.get("model", ""))
out("worlds", ctx.get("world_size", "1"))
out("k", ctx.get("k", "4"))
out("seed", ctx.get("seed", "1"))
out("warmup", ctx.get("warmup_steps", "1"))
out("steps", ctx.get("measured_steps", "2"))
out("schedules", ",".join(parts["schedule"]))
out("dtypes", ",".join(parts["dtype"]))
PYEOF
) || SA_DIE_CODE=2 sa_die "could not read the settings of '$run_json' (see above)"
models="" worlds="" k="" seed="" warmup="" steps="" schedules="" dtypes=""
eval "$settings"
[[ -n "$models" && -n "$schedules" ]] || SA_DIE_CODE=2 sa_die "'$run_json' names no model or no schedule"

py=${SHARDACCUM_TORCH_PYTHON:-python3}
if ! "$py" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  sa_say "no CUDA torch in $py (SHARDACCUM_TORCH_PYTHON picks another): the real systems are not run"
  exit 3
fi
# DeepSpeed (zero3, zero2): the machine's own, else the carried .deps/deepspeed/site
# (scripts/prepare_deepspeed_deps.sh), else those systems are not run.
if [[ ",$systems," =~ ,zero[23], ]] && ! "$py" -c 'import deepspeed' >/dev/null 2>&1; then
  if [[ -d "$SA_ROOT/.deps/deepspeed/site" ]]; then
    export PYTHONPATH="$SA_ROOT/.deps/deepspeed/site${PYTHONPATH:+:$PYTHONPATH}"
  fi
fi
mkdir -p "$out_dir"

# FSDP1's CPUOffload always pins; FSDP2's pageable offload is left out of the default job (its pinned
# case alone takes ~10 s a step); DeepSpeed's offload_optimizer runs with pin_memory both ways.
declare -A offloads=([fsdp2]=cpu,none [fsdp1]=cpu,none [zero3]=cpu,cpu-pageable,none [zero2]=cpu,cpu-pageable,none)
failed=0
IFS=, read -r -a world_list <<<"$worlds"
for world in "${world_list[@]}"; do
  for system in "${system_list[@]}"; do
    suffix=""
    (( ${#world_list[@]} > 1 )) && suffix="-w$world"
    json="$out_dir/real-$system$suffix.json"
    log="$out_dir/real-$system$suffix.log"
    launch=("$py")
    (( world > 1 )) && launch=("$py" -m torch.distributed.run --standalone --nproc-per-node "$world")
    sa_say "real $system at world size $world: $models, schedules $schedules, K=$k (log: $log)"
    t=$SECONDS
    if "${launch[@]}" "$SA_ROOT/bench/real/run.py" --system "$system" --model "$models" \
         --schedule "$schedules" --k "$k" --dtype "$dtypes" --offload "${offloads[$system]}" --seed "$seed" \
         --warmup "$warmup" --steps "$steps" --bench "$bench" --out "$json" 2>&1 | tee "$log" >&2 \
       && [[ -s "$json" ]]; then
      sa_say "real $system done in $(sa_elapsed "$t"): $json"
    else
      sa_warn "real $system failed after $(sa_elapsed "$t") (see $log)"
      failed=1
    fi
  done
done
exit "$failed"
