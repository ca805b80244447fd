#!/usr/bin/env bash
# Experiment driver (not part of the suite): the host add's OpenMP schedule, standalone and in the
# cpu-add-pipelined cases (SA_EXP_DYNAMIC: an uncommitted hook in cuda_host_ops.cpp's fp32 add).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/r; mkdir -p $R
(cmake --preset default >$R/build.log 2>&1 && cmake --build build -j 16 --target shardaccum_bench >>$R/build.log 2>&1) || { tail -30 $R/build.log; exit 1; }
sync
D=reports/h200-experiments-1204b
g++ -std=c++20 -O3 -fopenmp -I/usr/local/cuda/include $D/sched.cpp -L/usr/local/cuda/lib64 -lcudart -o /tmp/sched && /tmp/sched | tee $R/sched.txt
B="build/bench/shardaccum_bench --model uniform:16x64M,gpt2-xl --world-size 1 --schedule SSSS --binding data-free --mode flag --offload cpu-add-pipelined --division collective --benchmark_repetitions=3 --benchmark_out_format=json"
for i in 1 2; do
  for v in static dynamic; do
    if [[ $v == dynamic ]]; then export SA_EXP_DYNAMIC=1; else unset SA_EXP_DYNAMIC; fi
    timeout 150 $B --benchmark_out=$R/run-$v-$i.json > $R/bench-$v-$i.log 2>&1; echo "$v $i rc=$?"
  done
done
cd $OUT && tar czf r.tgz r && rm -rf r
