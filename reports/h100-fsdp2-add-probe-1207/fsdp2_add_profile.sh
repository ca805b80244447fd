#!/usr/bin/env bash
# #16: where FSDP2's CPU add of uniform:16x64M differs between the suite and the real FSDP2 (device probe).
# Suite (fsdp2 preset, traced) then the real FSDP2 (Kineto traces), then the suite's SSSS again; each
# process's page faults and context switches (getrusage via /usr/bin/time or /proc/vmstat deltas).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
D=/tmp/p; mkdir -p "$D"; t0=$SECONDS
pack() { tar czf "$OUT/probe.tgz.tmp" -C /tmp p && mv "$OUT/probe.tgz.tmp" "$OUT/probe.tgz"; echo "=== $* ($((SECONDS-t0)) s)"; }
cmake --preset default >"$D/build.log" 2>&1 && cmake --build build -j "$(nproc)" --target shardaccum_bench shardaccum_gen >>"$D/build.log" 2>&1 || { tail -30 "$D/build.log"; exit 1; }
sync; pack build
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; lscpu; free -m; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; python3 -c 'import torch; print(torch.__version__, torch.get_num_threads(), torch.__config__.parallel_info())'; command -v perf /usr/bin/time; } >"$D/machine.txt" 2>&1
vm() { grep -E '^(pgfault|pgmajfault|thp_fault_alloc|thp_fault_fallback|numa_hint_faults|pgmigrate_success|nr_free_pages|compact_stall) ' /proc/vmstat | tr '\n' ' '; }
runp() {  # name, command...
  local name=$1; shift; local s0=$SECONDS
  echo "$name vmstat before: $(vm)" >>"$D/vmstat.txt"
  if [[ -x /usr/bin/time ]]; then /usr/bin/time -v -o "$D/$name.rusage" "$@" >"$D/$name.log" 2>&1; else "$@" >"$D/$name.log" 2>&1; fi
  echo "$name rc=$? $((SECONDS-s0)) s"
  echo "$name vmstat after: $(vm)" >>"$D/vmstat.txt"
  pack "$name"
}
B=build/bench/shardaccum_bench
V=(--model uniform:16x64M --world-size 1 --k 4 --dtype fp32-fp32-fp32 --seed 23130 --warmup 1 --steps 2
   --cupti kernels --benchmark_out_format=json --grad-accumulation autograd --backward gemm --tokens 1024
   --preset fsdp2 --param-traffic on)
runp suite1 timeout 150 $B "${V[@]}" --schedule SSSS,nSnS,SnSS --trace "$D/suite1.trace.json" --trace-steps 2 --benchmark_out="$D/suite1.json"
runp real timeout 200 python3 bench/real/run.py --system fsdp2 --model uniform:16x64M --schedule SSSS,nSnS,SnSS --k 4 \
  --dtype fp32-fp32-fp32 --offload cpu --seed 23130 --warmup 1 --steps 2 --tokens 1024 --out "$D/real.json" \
  --profile-dir "$D/prof" --memory-history off
runp suite2 timeout 80 $B "${V[@]}" --schedule SSSS --trace "$D/suite2.trace.json" --trace-steps 2 --benchmark_out="$D/suite2.json"
gzip -f "$D"/*.trace.json
pack done
