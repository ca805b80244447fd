#!/usr/bin/env bash
# The one-GPU reference job with the faithful presets: the benchmark that scripts/run.sh --no-real runs
# (its command), the report made afterwards off the GPU.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
t0=$SECONDS
cmake --preset default >/tmp/build.log 2>&1 && cmake --build build -j "$(nproc)" --target shardaccum_bench >>/tmp/build.log 2>&1 || { tail -30 /tmp/build.log; exit 1; }
sync
echo "build $((SECONDS-t0)) s"
R=reports/h100-reference-presets; mkdir -p "$R"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv >"$R/gpus.csv"
timeout 500 build/bench/shardaccum_bench --backend auto --check last --trace "$R/trace.json" --trace-steps 1 \
  --benchmark_out="$R/run.json" --benchmark_out_format=json >/tmp/bench.log 2>&1
echo "bench rc=$? $((SECONDS-t0)) s"; grep -v '^accum/' /tmp/bench.log | tail -4
gzip -f "$R/trace.json"; gzip -c /tmp/bench.log >"$R/bench.log.gz"
tar czf "$OUT/ref.tgz" "$R"
