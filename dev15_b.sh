#!/usr/bin/env bash
# Device command 2 of issue 15 (temporary; the committed parts are in scripts/gpu_reference_run.sh).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export SHARDACCUM_GIT_COMMIT=${SHARDACCUM_GIT_COMMIT:-unknown}
T0=$SECONDS
mkdir -p reports/_gpu
cmake --preset default >reports/_gpu/build.log 2>&1 && cmake --build build -j16 --target shardaccum_bench shardaccum_gpu_tests >>reports/_gpu/build.log 2>&1 || { tail -30 reports/_gpu/build.log; exit 1; }
echo "build done at $((SECONDS-T0)) s"
timeout 120 build/tests/shardaccum_gpu_tests --gtest_filter='CudaBackend*:CudaCeilings*:GpuGemm*:GpuBytes*:GpuMemory.*:NvtxCupti*:GpuMatrix*' >reports/_gpu/gpu_tests.log 2>&1
rc=$?; echo "gpu tests rc=$rc at $((SECONDS-T0)) s"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|tests ran|gate gave up|hold_stream" reports/_gpu/gpu_tests.log | head -20
if [ $rc -ne 0 ] && grep -q "hold_stream\|timed out" reports/_gpu/gpu_tests.log; then export SHARDACCUM_HOLD_OPS=0; echo "HOLDS OFF"; fi
BUILD_TARGETS=shardaccum_bench PACK_TO=$OUT bash scripts/gpu_reference_run.sh timecheck overlap gemmref 2>&1 | grep -v '^\[case' | tail -75
echo "parts done at $((SECONDS-T0)) s"
rm -f reports/h200-reference-gemm/trace.json.gz
tar czf $OUT/dev15b.tgz reports/_gpu reports/profiles reports/h200-overlap reports/h200-reference-gemm 2>/dev/null
rm -f $OUT/gpu_session.tgz
ls -la $OUT
