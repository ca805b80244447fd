#!/usr/bin/env bash
# Experiment driver (not part of the suite): where does the suite's CPU add lose time?
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
R=$OUT/r; mkdir -p $R
(cmake --preset default >$R/build.log 2>&1 && cmake --build build -j 16 --target shardaccum_bench >>$R/build.log 2>&1) || { tail -30 $R/build.log; exit 1; }
sync
echo "== overlap"; /usr/local/cuda/bin/nvcc -std=c++20 -O3 -arch=sm_90 --expt-relaxed-constexpr -I. exp/overlap.cu strategies/backend/cuda_kernels.cu -o exp/overlap && ./exp/overlap 2>&1 | tee $R/overlap.txt
g++ -std=c++20 -O3 -fopenmp -I/usr/local/cuda/include exp/hostadd.cpp -L/usr/local/cuda/lib64 -lcudart -o exp/hostadd && echo "== standalone"; ./exp/hostadd 16 2>&1 | grep -v Anon | tee $R/standalone.txt
B="build/bench/shardaccum_bench --model uniform:16x64M --world-size 1 --schedule SSSS --binding data-free --mode flag --offload cpu-add-pipelined,cpu-add --division collective --warmup 1 --steps 6"
for v in "kernels" "off"; do
  echo "== bench cupti $v"
  $B --cupti $v --benchmark_out_format=json --benchmark_out=$R/run-cupti-$v.json > $R/bench-$v.log 2>&1 &
  P=$!
  python3 exp/threads.py $P 0.05 > $R/threads-$v.txt
  wait $P; echo "rc $?"
  grep -E "cpu-add" $R/bench-$v.log | cut -c1-250
  python3 - $R/run-cupti-$v.json <<'PY'
import json,sys
d=json.load(open(sys.argv[1]))
print('host_add ceiling', d['context'].get('ceiling_host_add_gbps'), 'during d2h', d['context'].get('host_add_during_d2h_gbps'))
for b in d['benchmarks']:
    print(b['name'][:120], 'step', round(b['step_ms'],1), 'cpu_add_ms', round(b['cpu_add_ms'],1), 'rate', round(b['cpu_add_bytes']/b['cpu_add_ms']/1e6,1), 'frac', round(b.get('cpu_add_frac_ceiling',0),3), 'bound', round(b.get('bound_ms',0),1))
PY
  head -40 $R/threads-$v.txt
done
cd $OUT && tar czf r.tgz r && rm -rf r
