#!/usr/bin/env bash
# The reference GPU session (nvidia-h200-x2): builds, runs the main job, the GPU tests, the
# offload-bound case, CUPTI on/off and a compute-sanitizer check, each step bounded in time.
# Results go to reports/_gpu/ and, packed after every step, to $PACK_TO/gpu_session.tgz (so a
# session cut short still returns what it finished). Run from the repository root.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=reports/_gpu
PACK_TO=${PACK_TO:-$OUT}
mkdir -p "$OUT" "$PACK_TO"
t0=$SECONDS
step() {
  tar czf "$PACK_TO/gpu_session.tgz.tmp" "$OUT" reports/h200x2-llama2-7b 2>/dev/null \
    && mv "$PACK_TO/gpu_session.tgz.tmp" "$PACK_TO/gpu_session.tgz"
  printf '\n=== %s (at %ds)\n' "$*" $((SECONDS - t0))
}
B=build/bench/shardaccum_bench

step "build"
cmake --preset default >"$OUT/build.log" 2>&1 && cmake --build build -j "$(nproc)" >>"$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpus.csv"

step "main job: scripts/run.sh --name h200x2-llama2-7b"
timeout 400 bash scripts/run.sh --no-install --name h200x2-llama2-7b 2>&1 | tee "$OUT/main_job.log" | grep -v '^accum/' | tail -40

step "GPU tests (ctest -L gpu)"
timeout 90 ctest --test-dir build -L gpu --output-on-failure >"$OUT/gpu_tests.log" 2>&1
tail -5 "$OUT/gpu_tests.log"

step "offload against the PCIe bound: uniform:16x64M, SSSS, cpu-add and gpu-add, CUPTI on and off"
for cupti in on off; do
  timeout 60 $B --model uniform:16x64M --schedule sync --binding data-free --mode flag \
    --offload cpu-add,gpu-add --cupti $cupti --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
    --benchmark_out="$OUT/offload16x64M_cupti_$cupti.json" --benchmark_out_format=json 2>&1 | grep -E '_mean|error' | sed 's/ accumulate.*step_ms=/ step_ms=/' | tail -4
done
timeout 40 $B --model uniform:16x64M --schedule sync --preset fsdp2 --trace "$OUT/trace_fsdp2.json" \
  --benchmark_out="$OUT/trace_fsdp2.bench.json" --benchmark_out_format=json 2>&1 | tail -2

step "compute-sanitizer memcheck, small case"
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 60 "$CS" --tool memcheck --leak-check no $B --model uniform:3x1000 --world-size 1 --warmup 0 \
  --steps 2 --schedule nSnS --preset fsdp2,zero3,fsdp1 --cupti off --ceilings off >"$OUT/memcheck.log" 2>&1
tail -3 "$OUT/memcheck.log"
step "done"
