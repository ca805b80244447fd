#!/usr/bin/env bash
# The reference GPU session (nvidia-h200-x2): build, then the named parts, each bounded in time:
#   tests    ctest -L gpu (the GPU tests, incl. one process per GPU and CUPTI's NVTX markers)
#   launch   threaded against `torchrun --no-python` 2 processes on llama2-7b (#6)
#   offload  uniform:16x64M SSSS cpu-add/gpu-add against the PCIe bound, CUPTI on and off, a trace
#   sanitize compute-sanitizer memcheck on a small case
#   main     the main job, scripts/run.sh --name h200x2-llama2-7b
#   memory   the 20-step fsdp2 run that once ran out of device memory, and the 60-step flat tests
#   fit      a 70B-class config at world 1: cases that cannot fit are skipped with their figures
#   check    the oracle on every measured step against the last only, on 4 cases of the main job
#   realtests the real systems' GPU tests (pytest tests/py_gpu: FSDP2/FSDP1 through bench/real/)
#   reference the one-GPU main job, scripts/run.sh --name h200-reference (suite + real systems)
#   deepspeed DeepSpeed ZeRO-3/ZeRO-2 (ZERO_SYSTEMS) beside it, into reports/h200-reference/
#   timecheck nsys against the suite's times and bytes: uniform:16x64M, world 1, SSSS and nnnS,
#            offload none/gpu-add/cpu-add (scripts/profile.sh, NSYS_DEPS=.deps/nsys), into reports/profiles/
#   overlap  uniform:16x64M SSSS without offload, lookahead 0/1/unbounded, synthetic and gemm backward,
#            with a trace and its report, into reports/h200-overlap/
#   limit    the limit strategies (#17): uniform:16x64M and gpt2-xl, SSSS, today's offloads and the
#            limit ones, division end/collective, synthetic and gemm backward, and preset ideal, into
#            reports/h200-limit/;
#            then no offload with --copy-in none,no-shard, and cpu-add(-pipelined) with 3 repetitions
#   validsuite #16's validation, the suite side: presets fsdp2 and fsdp1 with --param-traffic on and
#            their strategies without offload (VALID_SUITE_RUNS=zero3 zero3-none: ZeRO-3's, beside
#            validreal's VALID_SYSTEMS=zero3), uniform:16x64M and gpt2-xl, K=4, every canonical
#            schedule, into reports/h200-validation/suite-*.json (VALID_TOKENS=T: --backward gemm --tokens T;
#            VALID_MODELS and VALID_SUITE_RUNS narrow it: "validreal validsuite" in one call then
#            compares the two sides on one machine; VALID_SUITE_RUNS=fsdp2-none-two-per-sm adds FSDP2's
#            no-offload cases on the suite's idealised add, VALID_TRACE=1 a trace of each run's first step)
#   validreal  the same workload on the real systems (VALID_SYSTEMS, default "fsdp2 fsdp1"), bench/real/run.py
#            into reports/h200-validation/real-SYSTEM.json (report.py over both makes validation.json);
#            VALID_TOKENS=T as above (--tokens T), VALID_MODELS="m1 m2" one JSON per model,
#            VALID_OFFLOADS (default cpu,none) the runner's --offload
#   presetref the one-GPU suite job with the faithful presets (run.sh --no-real --name h200-reference-presets,
#            h100-reference-presets on an H100)
#   torchlines the installed torch's version and the sha256 of the files docs/PRESETS.md cites
#   suiteref the one-GPU suite job alone (run.sh --no-real --name h200-reference-suite)
#   gemmref  the one-GPU suite job with --backward gemm --tokens 1024 --cupti kernels
#            (run.sh --no-real --name h200-reference-gemm), then scripts/check_trace.py on its trace
# e.g. scripts/gpu_reference_run.sh tests launch offload. Results go to reports/_gpu/ and, packed
# after every part, to $PACK_TO/gpu_session.tgz: only the files this session wrote (a session cut
# short still returns what it finished; VALID_DIR=DIR puts the validation parts' results in DIR).
# Run from the repository root.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=reports/_gpu
PACK_TO=${PACK_TO:-$OUT}
mkdir -p "$OUT" "$PACK_TO"
t0=$SECONDS
# Only what this session wrote is packed: files under reports/ modified since it started (and
# VALID_DIR), never the committed files the tree arrived with (they made the archive too big to
# come back once).
stamp=$OUT/.session_start
touch "$stamp"
step() {
  { find reports -type f -newer "$stamp" ! -path "$OUT/*" 2>/dev/null; echo "$OUT"
    [[ -n "${VALID_DIR:-}" && -d "$VALID_DIR" ]] && echo "$VALID_DIR"; } >"$OUT/.pack_list"
  tar czf "$PACK_TO/gpu_session.tgz.tmp" -T "$OUT/.pack_list" 2>/dev/null \
    && mv "$PACK_TO/gpu_session.tgz.tmp" "$PACK_TO/gpu_session.tgz"
  printf '\n=== %s (at %ds)\n' "$*" $((SECONDS - t0))
}
B=build/bench/shardaccum_bench

step "build"
# BUILD_TARGETS (e.g. "shardaccum_bench shardaccum_gen") builds only those, for parts that need no tests.
cmake --preset default >"$OUT/build.log" 2>&1 \
  && cmake --build build -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >>"$OUT/build.log" 2>&1 \
  || { tail -30 "$OUT/build.log"; exit 1; }
# The build's dirty pages are written back now, not under the first run's host add ceiling: right
# after a build it read 63 GB/s against 104-142 in the runs after it (one H200 VM, 2026-12-03).
sync
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpus.csv"

for part in "$@"; do
  case "$part" in
  tests)
    step "GPU tests (ctest -L gpu)"
    # GpuMemoryFlat (60 steps per offload value) is the memory part's.
    # GPU_TESTS=REGEX runs only the GPU tests whose names match it (ctest -R).
    timeout 330 ctest --test-dir build -L gpu -E GpuMemoryFlat ${GPU_TESTS:+-R "$GPU_TESTS"} --output-on-failure --timeout 300 >"$OUT/gpu_tests.log" 2>&1
    grep -E "tests passed|Failed|\*\*\*" "$OUT/gpu_tests.log" | tail -12
    grep -E "rank 0 ended|CUPTI marker ranges" "$OUT/gpu_tests.log" | head -4
    nvidia-smi --query-gpu=index,memory.used --format=csv,noheader
    ;;
  launch)
    step "one process per GPU: threaded against torchrun --no-python, llama2-7b"
    L=(--model llama2-7b --binding data-free --mode flag --offload none,gpu-add,cpu-add
       --schedule nnnS,SSSS --benchmark_out_format=json)
    nvidia-smi --query-gpu=index,memory.used --format=csv,noheader
    # threaded, torchrun, threaded again: the two threaded runs bound the run-to-run noise.
    for run in threads torchrun threads2; do
      if [ "$run" = torchrun ]; then
        timeout 150 python3 -m torch.distributed.run --standalone --nproc-per-node 2 --no-python $B "${L[@]}" \
          --benchmark_out="$OUT/launch_$run.json" >"$OUT/launch_$run.log" 2>&1
      else
        timeout 150 $B "${L[@]}" --launcher threads --benchmark_out="$OUT/launch_$run.json" >"$OUT/launch_$run.log" 2>&1
      fi
      echo "$run rc=$?"; grep -E "FAILED|error" "$OUT/launch_$run.log" | head -3
    done
    ;;
  offload)
    step "offload against the PCIe bound: uniform:16x64M, SSSS, cpu-add and gpu-add, CUPTI on and off"
    for cupti in on off; do
      timeout 80 $B --model uniform:16x64M --schedule sync --binding data-free --mode flag \
        --offload cpu-add,gpu-add --cupti $cupti --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
        --benchmark_out="$OUT/offload16x64M_cupti_$cupti.json" --benchmark_out_format=json 2>&1 | grep -E '_mean|error' | sed 's/ accumulate.*step_ms=/ step_ms=/' | tail -4
    done
    timeout 40 $B --model uniform:16x64M --schedule sync --preset fsdp2 --trace "$OUT/trace_fsdp2.json" \
      --benchmark_out="$OUT/trace_fsdp2.bench.json" --benchmark_out_format=json 2>&1 | tail -2
    ;;
  sanitize)
    step "compute-sanitizer memcheck, small case"
    CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    timeout 60 "$CS" --tool memcheck --leak-check no $B --model uniform:3x1000 --world-size 1 --warmup 0 \
      --steps 2 --schedule nSnS --preset fsdp2,zero3,fsdp1 --cupti off --ceilings off >"$OUT/memcheck.log" 2>&1
    tail -3 "$OUT/memcheck.log"
    ;;
  main)
    step "main job: scripts/run.sh --name h200x2-llama2-7b"
    timeout 420 bash scripts/run.sh --no-install --name h200x2-llama2-7b 2>&1 | tee "$OUT/main_job.log" | grep -v '^accum/' | tail -30
    ;;
  memory)
    step "memory: uniform:8x256M fsdp2 SSSS, 20 steps (ran out of device memory before), then GpuMemoryFlat"
    SHARDACCUM_MEMORY_LOG=1 timeout 150 $B --model uniform:8x256M --world-size 1 --preset fsdp2 --schedule sync \
      --steps 20 --benchmark_out="$OUT/memory_fsdp2_20.json" --benchmark_out_format=json >"$OUT/memory_fsdp2_20.log" 2>&1
    echo "rc=$?"; grep -E '^memory' "$OUT/memory_fsdp2_20.log" | sed -n '2p;$p' | cut -c1-200
    timeout 560 ctest --test-dir build -R GpuMemoryFlat -V >"$OUT/memory_flat.log" 2>&1  # -V: the levels printed
    grep -E "tests passed|Failed|step 2:|step 60:" "$OUT/memory_flat.log" | cut -c1-220
    ;;
  fit)
    step "fit: llama3.1-70b at world 1 beside gpt2, three offloads"
    timeout 150 $B --model llama3.1-70b,gpt2 --world-size 1 --binding data-free --mode flag \
      --offload none,gpu-add,cpu-add --schedule sync --steps 1 >"$OUT/fit_70b.log" 2>&1
    echo "rc=$?"; grep -E "does not fit|done|FAILED" "$OUT/fit_70b.log" | cut -c1-400
    ;;
  check)
    step "check: --check every against --check last, llama2-7b, SSSS, the four offloads"
    C=(--model llama2-7b --binding data-free --mode flag --offload all --schedule sync)
    for mode in every last; do
      s0=$SECONDS
      timeout 250 $B "${C[@]}" --check $mode --benchmark_out="$OUT/check_$mode.json" --benchmark_out_format=json \
        >"$OUT/check_$mode.log" 2>&1
      echo "--check $mode: rc=$? wall $((SECONDS - s0)) s"
    done
    ;;
  realtests)
    step "real systems' GPU tests: pytest tests/py_gpu"
    # The GPU machines may lack pytest: scripts/prepare_device_deps.sh puts it in .deps/pytest/site.
    python3 -c 'import pytest' 2>/dev/null || export PYTHONPATH="$PWD/.deps/pytest/site${PYTHONPATH:+:$PYTHONPATH}"
    timeout 300 python3 -m pytest tests/py_gpu -q -x -p no:cacheprovider >"$OUT/real_gpu_tests.log" 2>&1
    echo "rc=$?"; tail -15 "$OUT/real_gpu_tests.log"
    ;;
  reference)
    step "one-GPU main job: scripts/run.sh --name h200-reference (suite and real systems, timed whole)"
    s0=$SECONDS
    timeout 560 bash scripts/run.sh --no-install --name h200-reference 2>&1 | tee "$OUT/reference_job.log" \
      | grep -v '^accum/' | tail -40
    echo "reference job: wall $((SECONDS - s0)) s (the build was done before it)"
    ;;
  deepspeed)
    # DeepSpeed beside the reference job: ZERO_SYSTEMS (default "zero3 zero2") on its two layouts, S^K and
    # n^(K-1)S, offload pinned/pageable/none, with the reference's seed; .deps/deepspeed from
    # scripts/prepare_deepspeed_deps.sh when the machine has no deepspeed (it has none, and no network).
    step "DeepSpeed: probe, then ${ZERO_SYSTEMS:-zero3 zero2} on uniform:16x64M and gpt2-xl"
    { python3 -m pip --version; python3 -c 'import deepspeed' && echo "deepspeed: the machine's own"; } \
      >"$OUT/deepspeed_probe.log" 2>&1
    if ! python3 -c 'import deepspeed' 2>/dev/null; then
      export PYTHONPATH="$PWD/.deps/deepspeed/site${PYTHONPATH:+:$PYTHONPATH}"
    fi
    python3 -c 'import deepspeed, torch; from deepspeed.accelerator import get_accelerator as g
print("deepspeed", deepspeed.__version__, "from", deepspeed.__file__, "accelerator", g().device_name(), "torch", torch.__version__)' \
      >>"$OUT/deepspeed_probe.log" 2>&1
    cat "$OUT/deepspeed_probe.log"
    D=reports/h200-reference
    # ZERO_CASES="zero2:uniform:16x64M zero3:gpt2-xl" picks system:model pairs instead (a session's share).
    pairs=${ZERO_CASES:-}
    if [[ -z "$pairs" ]]; then
      for system in ${ZERO_SYSTEMS:-zero3 zero2}; do pairs+=" $system:uniform:16x64M $system:gpt2-xl"; done
    fi
    for pair in $pairs; do
      system=${pair%%:*} model=${pair#*:}
      {
        tag="$system-${model/:/-}"
        s0=$SECONDS
        timeout "${ZERO_TIMEOUT:-250}" python3 bench/real/run.py --system "$system" --model "$model" \
          --schedule SSSS,nnnS --k 4 --dtype fp32-fp32-fp32 --offload all --seed 23130 --warmup 1 --steps 2 \
          --bench "$B" --out "$D/real-$tag.json" >"$D/real-$tag.log" 2>&1
        echo "$tag: rc=$? wall $((SECONDS - s0)) s"; grep -E '^\[real\] +(real|error)' "$D/real-$tag.log" | head -8
        step "$tag"
      }
    done
    ;;
  timecheck)
    step "nsys time check: uniform:16x64M, world 1, SSSS and nnnS, offload none/gpu-add/cpu-add"
    s0=$SECONDS
    NSYS_DEPS=${NSYS_DEPS:-$PWD/.deps/nsys} timeout 420 bash scripts/profile.sh --no-build \
      --filter 'offload:(none|gpu-add|cpu-add)/mode:flag' --name w1-uniform16x64M-times \
      -- --model uniform:16x64M --world-size 1 --schedule SSSS,nnnS --binding data-free \
      >"$OUT/timecheck.log" 2>&1
    echo "timecheck: rc=$? wall $((SECONDS - s0)) s"; tail -30 "$OUT/timecheck.log"
    cp reports/profiles/w1-uniform16x64M-times.times.json reports/profiles/w1-uniform16x64M-times.bytes.txt \
      reports/profiles/w1-uniform16x64M-times.bench.json "$OUT/" 2>/dev/null
    ;;
  overlap)
    step "overlap: uniform:16x64M SSSS offload none, lookahead 0/1/unbounded, synthetic and gemm"
    D=reports/h200-overlap
    mkdir -p "$D"
    timeout 200 $B --model uniform:16x64M --world-size 1 --schedule SSSS --binding data-free --mode flag \
      --offload none --lookahead 0,1,unbounded --cupti kernels --trace "$D/trace.json" \
      --benchmark_out="$D/run.json" --benchmark_out_format=json >"$D/synthetic.log" 2>&1
    echo "synthetic: rc=$?"
    timeout 200 $B --model uniform:16x64M --world-size 1 --schedule SSSS --binding data-free --mode flag \
      --offload none --lookahead 0,1,unbounded --backward gemm --tokens 1024 --cupti kernels \
      --trace "$D/trace-gemm.json" --benchmark_out="$D/run-gemm.json" --benchmark_out_format=json \
      >"$D/gemm.log" 2>&1
    echo "gemm: rc=$?"
    for r in "" -gemm; do
      python3 scripts/check_trace.py "$D/run$r.json" "$D/trace$r.json" >"$D/check_trace$r.txt" 2>&1
      echo "check_trace$r: rc=$?"; tail -6 "$D/check_trace$r.txt"
    done
    ;;
  limit)
    # #17: the limit strategies beside today's offloads, one H200, the reference layouts, K=4, SSSS,
    # the division at the end and in the collective, synthetic and gemm backward; then preset ideal.
    # At 123af7e the gemm run (32 cases) needed about 240 s: 150 s cut it at case 20.
    # LIMIT_OFFLOADS sets the offloads: by default issue 17's table's (none, today's gpu-add and cpu-add,
    # the two pipelined), about 350 s in all on one H200; `all` (20 values a layout) filled the synthetic
    # run's 300 s alone on 2026-12-06 and cut the rest. LIMIT_DIVISIONS (default end,collective) sets the
    # divisions (collective alone halves the two main runs), LIMIT_DIR (default reports/h200-limit) the folder.
    offloads=${LIMIT_OFFLOADS:-none,gpu-add,cpu-add,gpu-add-pipelined,cpu-add-pipelined}
    divisions=${LIMIT_DIVISIONS:-end,collective}
    step "limit: uniform:16x64M and gpt2-xl, SSSS, offload $offloads, division $divisions, synthetic and gemm"
    D=${LIMIT_DIR:-reports/h200-limit}
    mkdir -p "$D"
    # The main runs take CUPTI's memcpy records only (--cupti on, the suite's default: the copies'
    # bytes and both directions in the trace); kernel records are instrumentation that costs the CPU
    # add (0.78-0.81 of its ceiling with them against 0.87-0.91 without, reports/h200-limit-1204f) and
    # NCCL's kernels, so they are taken only in the `ideal` runs, which check_trace.py reads.
    L=(--model uniform:16x64M,gpt2-xl --world-size 1 --schedule SSSS --benchmark_out_format=json)
    for bw in synthetic gemm; do
      extra=(); [[ $bw == gemm ]] && extra=(--backward gemm --tokens 1024)
      timeout "${LIMIT_TIMEOUT:-300}" $B "${L[@]}" "${extra[@]}" --binding data-free --mode flag --offload "$offloads" \
        --division "$divisions" --trace "$D/trace-$bw.json" --benchmark_out="$D/run-$bw.json" >"$D/$bw.log" 2>&1
      echo "$bw: rc=$?"; grep -E 'error|FAILED|WRONG' "$D/$bw.log" | head -3
      timeout 80 $B "${L[@]}" "${extra[@]}" --cupti kernels --preset ideal --trace "$D/trace-ideal-$bw.json" \
        --benchmark_out="$D/run-ideal-$bw.json" >"$D/ideal-$bw.log" 2>&1
      echo "ideal $bw: rc=$?"; grep -E 'error|FAILED|WRONG' "$D/ideal-$bw.log" | head -3
      python3 scripts/check_trace.py "$D/run-ideal-$bw.json" "$D/trace-ideal-$bw.json" >"$D/check_trace-ideal-$bw.txt" 2>&1
      echo "check_trace ideal-$bw: rc=$?"; tail -2 "$D/check_trace-ideal-$bw.txt"
      gzip -f "$D/trace-$bw.json" "$D/trace-ideal-$bw.json"
      step "limit $bw"
    done
    # World 1's limit without offload skips the one-rank reduce-scatter's copy (--copy-in no-shard),
    # beside the same case with it; and the CPU adds three times over (repetitions), whose rate
    # varies with the machine's host memory from run to run.
    for bw in synthetic gemm; do
      extra=(); [[ $bw == gemm ]] && extra=(--backward gemm --tokens 1024)
      timeout 120 $B "${L[@]}" "${extra[@]}" --binding data-free --mode flag --offload none --division collective \
        --copy-in none,no-shard --benchmark_out="$D/run-noshard-$bw.json" >"$D/noshard-$bw.log" 2>&1
      echo "noshard $bw: rc=$?"
    done
    timeout 200 $B "${L[@]}" --binding data-free --mode flag --offload cpu-add,cpu-add-pipelined --division collective \
      --benchmark_repetitions=3 --benchmark_out="$D/run-cpu-repeats.json" >"$D/cpu-repeats.log" 2>&1
    echo "cpu repeats: rc=$?"
    step "limit extras"
    ;;
  validsuite)
    # #16: the presets on the real systems' workload (bench/real/run.py's defaults here: seed 23130,
    # 1 warm-up + 2 measured steps), with the parameters' copies (--param-traffic on) as FSDP's offload
    # makes them; without offload the preset's own binding/mode/division/copy-in/lookahead and offload none,
    # FSDP2's with --param-traffic on (its unsharded parameters; FSDP1's NO_SHARD at world 1 has none);
    # every case accumulates as autograd does (--grad-accumulation autograd), as the real systems do, and
    # adds on the device with PyTorch's full grid (the presets' default; --device-add-grid torch for the
    # no-offload runs, whose axis values are no preset's), on the comm stream at their systems' priority
    # (the presets' default; --comm-priority default for FSDP1's and ZeRO-3's no-offload runs).
    step "validation, suite: fsdp2 and fsdp1 presets (param traffic on) and their no-offload strategies"
    D=${VALID_DIR:-reports/h200-validation}
    mkdir -p "$D"
    # VALID_MODELS="m1 m2" (as validreal's) narrows the models, the JSON named suite-RUN-M1_M2.json;
    # VALID_SUITE_RUNS narrows the runs. With validreal in the same call, the real systems and their
    # presets meet the same machine: between machines the host memory's rates differ by up to 1.7x
    # (host add ceiling 100-171 GB/s over the sessions of 2026-12-03/04, reports/README.md), more
    # than the 20% the phases are compared to.
    models=${VALID_MODELS:-uniform:16x64M gpt2-xl}
    tag=""  # each model's name up to its first ':', as validreal's file names
    for m in ${VALID_MODELS:-}; do tag+="${tag:+_}${m%%:*}"; done
    V=(--model "${models// /,}" --world-size 1 --k 4 --dtype fp32-fp32-fp32 --seed 23130
       --warmup 1 --steps 2 --cupti kernels --benchmark_out_format=json --grad-accumulation autograd)
    # VALID_TOKENS=T: the backward of T tokens of GEMMs on both sides (the real runner's --tokens T).
    [[ "${VALID_TOKENS:-0}" != 0 ]] && V+=(--backward gemm --tokens "$VALID_TOKENS")
    for run in ${VALID_SUITE_RUNS:-fsdp2 fsdp1 fsdp2-none fsdp1-none}; do
      sched=all  # zero3-none: the schedules DeepSpeed runs
      case $run in
        fsdp2) sel=(--preset fsdp2 --param-traffic on) ;;
        fsdp1) sel=(--preset fsdp1 --param-traffic on) ;;
        fsdp2-none) sel=(--binding data-free --offload none --mode flag --division collective --copy-in chunk-cat --lookahead 1 --param-traffic on --device-add-grid torch) ;;
        fsdp1-none) sel=(--binding data-free --offload none --mode shape --division pre-post --copy-in no-shard --lookahead unbounded --device-add-grid torch --comm-priority default) ;;
        # ZeRO-3 with offload_optimizer alone keeps its parameters on the GPU: no --param-traffic.
        # Its matrix leaves nSnS and SnSS out, as DeepSpeed cannot run them (docs/PRESETS.md Z7).
        zero3) sel=(--preset zero3) ;;
        zero3-none) sel=(--binding data-free --offload none --mode flag --division pre --lookahead buckets --device-add-grid torch --comm-priority default); sched=SSSS,nnnS ;;
        # zero3-none at the suite's greatest priority (FSDP2's): beside zero3-none, what DeepSpeed's
        # priority-0 stream changes (docs/PRESETS.md Z1); the report pairs the real cases with the default ones.
        zero3-none-greatest) sel=(--binding data-free --offload none --mode flag --division pre --lookahead buckets --device-add-grid torch --comm-priority greatest); sched=SSSS,nnnS ;;
        # fsdp2-none on the suite's idealised add: beside fsdp2-none, what PyTorch's full-grid `+=`
        # costs (docs/PRESETS.md A4); the report pairs the real cases with the torch ones.
        fsdp2-none-two-per-sm) sel=(--binding data-free --offload none --mode flag --division collective --copy-in chunk-cat --lookahead 1 --param-traffic on --device-add-grid two-per-sm) ;;
        *) echo "validsuite: unknown run '$run' in VALID_SUITE_RUNS (fsdp2 fsdp1 fsdp2-none fsdp1-none fsdp2-none-two-per-sm zero3 zero3-none zero3-none-greatest)"; continue ;;
      esac
      name=suite-$run${tag:+-$tag}
      # VALID_TRACE=1: each run's built-in trace of its first measured step (--cupti kernels: every
      # kernel and copy per stream), for the copy-out's neighbours (reports/h200-diagnosis-1204/call3/copy_out.py);
      # VALID_TRACE_STEPS=N traces the first N (0: all), for a B that moves from step to step.
      tr=(); [[ "${VALID_TRACE:-0}" == 1 ]] && tr=(--trace "$D/$name.trace.json" --trace-steps "${VALID_TRACE_STEPS:-1}")
      s0=$SECONDS
      timeout "${VALID_SUITE_TIMEOUT:-200}" $B "${V[@]}" --schedule "$sched" "${sel[@]}" "${tr[@]}" --benchmark_out="$D/$name.json" >"$D/$name.log" 2>&1
      echo "suite $run: rc=$? $((SECONDS - s0)) s"; grep -E 'error|FAILED|WRONG' "$D/$name.log" | head -3
      step "validation suite $run"
    done
    ;;
  validreal)
    step "validation, real: ${VALID_SYSTEMS:-fsdp2 fsdp1} on uniform:16x64M and gpt2-xl"
    D=${VALID_DIR:-reports/h200-validation}
    mkdir -p "$D"
    # VALID_MODELS="m1 m2" runs one model per command (real-SYSTEM-MODEL.json), so that each fits a limit.
    # zero3/zero2 (VALID_SYSTEMS): the machine's DeepSpeed, else the carried .deps/deepspeed/site
    # (scripts/prepare_deepspeed_deps.sh); the runner skips the schedules DeepSpeed cannot run.
    if [[ " ${VALID_SYSTEMS:-} " == *" zero"* ]] && ! python3 -c 'import deepspeed' 2>/dev/null; then
      export PYTHONPATH="$PWD/.deps/deepspeed/site${PYTHONPATH:+:$PYTHONPATH}"
    fi
    for system in ${VALID_SYSTEMS:-fsdp2 fsdp1}; do
      for model in ${VALID_MODELS:-uniform:16x64M,gpt2-xl}; do
        name=real-$system${VALID_MODELS:+-${model%%:*}}
        s0=$SECONDS
        timeout "${VALID_TIMEOUT:-540}" python3 bench/real/run.py --system "$system" --model "$model" \
          --schedule all --k 4 --dtype fp32-fp32-fp32 --offload "${VALID_OFFLOADS:-cpu,none}" --seed 23130 --warmup 1 --steps 2 \
          --tokens "${VALID_TOKENS:-0}" --out "$D/$name.json" >"$D/$name.log" 2>&1
        echo "real $system $model: rc=$? $((SECONDS - s0)) s"; grep -E '^\[real\] wrote|Error|error' "$D/$name.log" | tail -3
        step "validation real $system $model"
      done
    done
    ;;
  presetref)
    # The folder names the GPU that ran it (the nvidia-h200 kind may be served by an H100).
    gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
    case "$gpu" in *H100*) ref=h100-reference-presets ;; *) ref=h200-reference-presets ;; esac
    step "one-GPU suite job with the faithful presets on $gpu: run.sh --no-real --name $ref"
    s0=$SECONDS
    timeout "${PRESETREF_TIMEOUT:-540}" bash scripts/run.sh --no-install --no-real --name "$ref" \
      2>&1 | tee "$OUT/presetref_job.log" | grep -v '^accum/' | tail -25
    echo "presetref job: wall $((SECONDS - s0)) s (the build was done before it)"
    ;;
  torchlines)
    # #16's checklist: the cited lines of the installed torch (docs/PRESETS.md), printed for comparison.
    step "torch lines for docs/PRESETS.md"
    python3 -c 'import torch, os; print(torch.__version__, os.path.dirname(torch.__file__))' | tee "$OUT/torch_lines.txt"
    T=$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')
    (cd "$T" && sha256sum distributed/fsdp/_fully_shard/_fsdp_collectives.py \
      distributed/fsdp/_fully_shard/_fsdp_param_group.py \
      distributed/fsdp/_fully_shard/_fsdp_param.py \
      distributed/fsdp/_fully_shard/_fsdp_api.py \
      distributed/fsdp/_runtime_utils.py \
      distributed/fsdp/_init_utils.py \
      distributed/fsdp/_flat_param.py \
      distributed/algorithms/_comm_hooks/default_hooks.py \
      distributed/run.py) >>"$OUT/torch_lines.txt"
    cat "$OUT/torch_lines.txt"
    ;;
  suiteref|gemmref)
    name=h200-reference-suite flags=(--cupti kernels)
    [[ "$part" == gemmref ]] && name=h200-reference-gemm flags=(--backward gemm --tokens 1024 --cupti kernels)
    step "one-GPU suite job: scripts/run.sh --no-real --name $name -- ${flags[*]}"
    s0=$SECONDS
    timeout 540 bash scripts/run.sh --no-install --no-real --name "$name" -- "${flags[@]}" 2>&1 \
      | tee "$OUT/$name.log" | grep -v '^accum/' | tail -25
    echo "$name: wall $((SECONDS - s0)) s (the build was done before it)"
    gunzip -kf "reports/$name/trace.json.gz" 2>/dev/null
    python3 scripts/check_trace.py "reports/$name/run.json" "reports/$name/trace.json" \
      >"reports/$name/check_trace.txt" 2>&1
    echo "check_trace: rc=$?"; tail -8 "reports/$name/check_trace.txt"
    ;;
  *) echo "unknown part '$part' (tests, launch, offload, sanitize, main, memory, fit, check, realtests, reference, deepspeed, timecheck, overlap, limit, validsuite, validreal, presetref, torchlines, suiteref, gemmref)"; exit 2 ;;
  esac
done
step "done"
