#!/usr/bin/env bash
# The main job: install what is missing, build, run the benchmark matrix, write the report. See --help.
set -euo pipefail

SA_PROG=run.sh
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

usage() {
  cat <<'EOF'
usage: scripts/run.sh [--name NAME] [--part I/N] [--no-install] [--cuda] [--no-trace | --full-trace] [--no-real] [-- SHARDACCUM_BENCH_FLAGS...]

The main job of shardaccum, the first command to run on a fresh machine:
  1. installs what is missing (scripts/install_deps.sh --for run; nothing when all is there),
  2. configures and builds shardaccum_bench: with a GPU visible (nvidia-smi lists one, or
     /dev/nvidia0) CMake preset `default`, folder build/, the CUDA backend built when nvcc is
     found; with no GPU visible preset `host`, folder build-host/, no nvcc pass (--cuda: `default`),
  3. runs shardaccum_bench --backend auto over its default matrix: on 2 or more GPUs, llama2-7b on
     every visible GPU; on one GPU the single-GPU reference job (uniform:16x64M and gpt2-xl, 1 warm-up
     and 2 measured steps); on a machine with no GPU, the host backend (uniform:8x1M, world size 2,
     K=4, the default matrix's 16 strategies and the 5 presets on the 4 canonical schedules less
     zero3 on nSnS and SnSS: 82 cases; minutes on 2 cores, more under load), whose times are host
     wall-clock,
  3b. on GPUs, with a CUDA torch importable, the real systems on the same workload
     (scripts/run_real.sh: PyTorch FSDP2 and FSDP1, bench/real/run.py, offload cpu and none), written
     beside run.json as real-fsdp2.json and real-fsdp1.json; the report puts each real case beside
     the preset named after its system (--no-real skips them; without torch it says so and goes on),
  4. writes the Google Benchmark JSON to reports/NAME/run.json, a Perfetto/Chrome trace to
     reports/NAME/trace.json (shardaccum_bench --trace, kept to the first measured step of every
     case on every rank: about 9 MB for the default host matrix), and the report
     made from them by scripts/report.py to reports/NAME/README.md (with PNG plots, among them a
     timeline of one step per case drawn from the trace), and prints the report's path.
     All of it is written in a new folder, reports/.NAME.partial.PID/, which replaces
     reports/NAME only once the run and the report have succeeded: a failed or interrupted run
     leaves an older reports/NAME as it was, and once the benchmark has finished its results stay
     in that folder (printed) if the real systems or the report fail or are stopped.

options:
  --name NAME     report folder under reports/ (letters, digits, '.', '_', '-'; default
                  run-YYYYmmdd-HHMMSS); an older report of the same name is replaced, as a
                  whole, when the new run and report have succeeded
  --part I/N      run only the I-th of N slices of the case matrix (shardaccum_bench --part), for a
                  job longer than one command; needs --name: the part goes to
                  reports/NAME.part-I-of-N/. Join the parts' run.json with scripts/merge.py
  --no-install    do not run scripts/install_deps.sh (also: SHARDACCUM_NO_INSTALL=1)
  --cuda          build the preset `default` (build/, CUDA backend when nvcc is found) even with no
                  GPU visible (also: SHARDACCUM_PRESET=default)
  --no-trace      write no trace (reports/NAME/trace.json); the report then has no timeline
  --full-trace    keep every measured step of every case in the trace (about 3 times larger
                  with the default 3 measured steps; open it in ui.perfetto.dev)
  --no-real       do not run the real systems (step 3b)
  -h, --help      this text
  -- FLAGS...     passed to shardaccum_bench as they are (an option run.sh does not know is passed
                  on too); see shardaccum_bench --help (build-host/bench/ with no GPU, build/bench/
                  with one). With --trace FILE among them (outside reports/NAME/, which is
                  replaced), the trace goes to FILE, whole, and the report draws from it;
                  --trace-steps N among them keeps N measured steps of each case (else 1).
                  --describe-registry, --describe-layout, --list and --benchmark_list_tests
                  print what shardaccum_bench says, with no run and no report

examples:
  scripts/run.sh
  scripts/run.sh --name smoke -- --offload none --schedule sync
  scripts/run.sh --name presets -- --preset fsdp2,zero3 --benchmark_repetitions=5
  scripts/run.sh -- --list          (only lists the cases; no run, no report)
  scripts/run.sh --name big --part 1/2 ; scripts/run.sh --name big --part 2/2
  python3 scripts/merge.py reports/big.part-{1,2}-of-2/run.json --out big.json

environment: SHARDACCUM_JOBS=N limits parallel build jobs; SHARDACCUM_PRESET=default|host|debug
builds with that CMake preset whether or not a GPU is visible (build/, build-host/, build-debug/;
only default runs nvcc); SHARDACCUM_PYTHON=PATH is the
Python for the report tool. NCCL_NVLS_ENABLE=0,
TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 are always exported.

exit status: 0 run and report written (a WRONG case is a result, not a failure: the known-incorrect
strategies are meant to be caught); 1 the build, the run or the report failed, or a real system
failed (the report is then written without it, and says so); 2 bad arguments.
EOF
}

t_start=$SECONDS
name=""
part=""          # --part I/N: one slice of the case matrix
install=1
trace_mode=first   # first: the first measured step of each case; full: every step; none: no trace
real=1             # 0: --no-real
cuda=0             # 1: --cuda, build the preset default with no GPU visible
[[ "${SHARDACCUM_NO_INSTALL:-0}" == 1 ]] && install=0
bench_args=()
seen=""           # --name and --part, each allowed once
# once FLAG: FLAG given twice is refused (which one names the folder would be a guess).
once() {
  [[ " $seen " == *" $1 "* ]] && SA_DIE_CODE=2 sa_die "$1 is given twice: give it once"
  seen+=" $1"
}
# set_trace_mode MODE FLAG: --no-trace (none) and --full-trace (full) exclude each other.
set_trace_mode() {
  [[ "$trace_mode" == first || "$trace_mode" == "$1" ]] \
    || SA_DIE_CODE=2 sa_die "--${trace_mode/none/no}-trace and $2: give one of them (no trace, or every step in it)"
  trace_mode=$1
}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --name) once --name; [[ $# -ge 2 && -n "$2" ]] || SA_DIE_CODE=2 sa_die "--name needs a value (a folder name under reports/)"; name=$2; shift 2 ;;
    --name=*) once --name; name=${1#--name=}; [[ -n "$name" ]] || SA_DIE_CODE=2 sa_die "--name= is empty: give a folder name under reports/"; shift ;;
    --part) once --part; [[ $# -ge 2 ]] || SA_DIE_CODE=2 sa_die "--part needs a value I/N"; part=$2; shift 2 ;;
    --part=*) once --part; part=${1#--part=}; shift ;;
    --no-install) install=0; shift ;;
    --cuda) cuda=1; shift ;;
    --no-trace) set_trace_mode none "$1"; shift ;;
    --full-trace) set_trace_mode full "$1"; shift ;;
    --no-real) real=0; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; bench_args+=("$@"); break ;;
    *) bench_args+=("$1"); shift ;;
  esac
done

if [[ -n "$part" ]]; then
  # Decimal without leading zeros (the folder is named by them) and 1 <= I <= N, checked here
  # rather than by shardaccum_bench after the install and the build.
  [[ "$part" =~ ^([1-9][0-9]{0,5})/([1-9][0-9]{0,5})$ ]] && (( BASH_REMATCH[1] <= BASH_REMATCH[2] )) \
    || SA_DIE_CODE=2 sa_die "--part '$part': give I/N with 1 <= I <= N (e.g. --part 2/3)"
fi
name_given=$name
[[ -n "$name" ]] || name="run-$(date +%Y%m%d-%H%M%S)"
[[ "$name" =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$ ]] \
  || SA_DIE_CODE=2 sa_die "--name '$name': use letters, digits, '.', '_' and '-' (one folder name, starting with a letter or digit)"

info_only=0       # --list / --help: show what shardaccum_bench says, no run and no report
describe=0        # --describe-registry / --describe-layout: printed with no backend (the bench refuses one)
has_backend=0
has_trace_steps=0 # --trace-steps N given after --: the user's count, not run.sh's 1
user_trace=""     # the FILE of a --trace FILE given after --
prev=""
for a in ${bench_args[@]+"${bench_args[@]}"}; do
  [[ "$prev" == --trace ]] && user_trace=$a
  prev=$a
  case "$a" in
    --list|-h|--help|--benchmark_list_tests|--benchmark_list_tests=true) info_only=1 ;;
    --describe-registry|--describe-layout) info_only=1; describe=1 ;;
    --trace-steps|--trace-steps=*) has_trace_steps=1 ;;
    --backend|--backend=*) has_backend=1 ;;
    --trace=*) user_trace=${a#--trace=} ;;
    --part|--part=*) SA_DIE_CODE=2 sa_die "'$a' after --: give --part I/N before -- (run.sh names the folder by it)" ;;
    --benchmark_out=*|--benchmark_out_format=*|--benchmark_out|--benchmark_out_format)
      SA_DIE_CODE=2 sa_die "'$a': run.sh writes the JSON to reports/NAME/run.json itself (choose NAME with --name)" ;;
  esac
done
# The parts run as separate commands: one name, given by the user, keeps them together.
[[ -n "$part" && -z "$name_given" ]] && (( ! info_only )) \
  && SA_DIE_CODE=2 sa_die "--part $part needs --name NAME: each part goes to reports/NAME.part-I-of-N/" \
                          "(merge them with scripts/merge.py)"
backend_args=()
(( has_backend || describe )) || backend_args=(--backend auto)
folder=$name      # the folder under reports/: NAME, or NAME.part-I-of-N
if [[ -n "$part" ]]; then
  bench_args=(--part "$part" ${bench_args[@]+"${bench_args[@]}"})
  folder="$name.part-${part%/*}-of-${part#*/}"
fi
again="the next run with --name $name${part:+ --part $part}"  # the run that removes a kept stage
if [[ -n "$user_trace" ]]; then
  [[ "$trace_mode" == none ]] && SA_DIE_CODE=2 sa_die "--no-trace and --trace $user_trace: give one of them"
  # reports/FOLDER is replaced by the stage at the end: a trace written inside it would be deleted
  # while the new README links it.
  case "$(realpath -m "$user_trace")/" in
    "$(realpath -m "$SA_ROOT/reports/$folder")"/*)
      SA_DIE_CODE=2 sa_die "--trace $user_trace is inside reports/$folder/, which run.sh replaces at the end:" \
        "leave --trace out (the trace then goes to reports/$folder/trace.json) or give a path outside it" ;;
  esac
  [[ "$user_trace" == /* ]] || user_trace="$PWD/$user_trace"   # report.py runs from the stage
fi
sa_pick_preset "$cuda"

# 1. Dependencies, 2. build.
if (( install )); then
  "$SA_ROOT/scripts/install_deps.sh" --for run || sa_die "could not install what is missing (see above)"
fi
command -v cmake >/dev/null 2>&1 || sa_die "cmake is not installed (run scripts/install_deps.sh)"
# shardaccum_gen: the generator library of the real systems (bench/real/ loads it with ctypes).
sa_build shardaccum_bench shardaccum_gen
[[ -x "$SA_BENCH" ]] || sa_die "the build did not produce $SA_BENCH"

if (( info_only )); then
  exec "$SA_BENCH" ${backend_args[@]+"${backend_args[@]}"} "${bench_args[@]}"
fi

PY=$(sa_python run) || sa_die "no Python with $(sa_py_modules run) for the report tool: run scripts/install_deps.sh"

# 3. What will run: shardaccum_bench validates every flag and names the backend before any work.
list_err=$(mktemp)
stage=""          # reports/.FOLDER.partial.PID: the new report until it replaces reports/FOLDER
keep_stage=0      # 1 once the stage holds a finished run.json (the benchmark is done)
cleanup() {
  rm -f "$list_err"
  [[ -n "$stage" && "$keep_stage" == 0 ]] && rm -rf "$stage"
  return 0
}
trap cleanup EXIT
# bash runs a trap only once the foreground command has ended: the benchmark and the real systems
# run in the background (run_child) so that a signal to this script stops them at once, with TERM
# (a background job of a script ignores INT), and they clean up their own partial files.
child=""
on_signal() {
  if [[ -n "$child" ]]; then
    kill -TERM "$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  # Stopped once the benchmark had written run.json (renamed into place whole, so a non-empty one
  # is complete: in the real systems, the report, or the benchmark's own trace writing after it),
  # the results stay.
  if [[ -n "$stage" && -s "$stage_dir/run.json" ]]; then
    keep_stage=1   # written, but the benchmark had not exited yet (its trace comes after run.json)
    sa_warn "interrupted; the finished results are kept in ${stage_dir#"$SA_ROOT/"}/ until $again"
  fi
  exit "$1"   # through cleanup
}
run_child() {
  "$@" &
  child=$!
  local rc=0
  wait "$child" || rc=$?
  child=""
  return "$rc"
}
hold_signal() { pending=$1; }
# on_traps HANDLER: INT, TERM and HUP call HANDLER with the exit status each stands for.
on_traps() { trap "$1 130" INT; trap "$1 143" TERM; trap "$1 129" HUP; }
on_traps on_signal
if ! "$SA_BENCH" --list ${backend_args[@]+"${backend_args[@]}"} ${bench_args[@]+"${bench_args[@]}"} \
      >/dev/null 2>"$list_err"; then
  cat "$list_err" >&2
  SA_DIE_CODE=2 sa_die "shardaccum_bench rejected the arguments (see above; ${SA_BENCH#"$SA_ROOT/"} --help)"
fi
summary_line=$(tail -n 1 "$list_err")               # "N cases on backend B" ("1 case" too)
backend=$(sed -n 's/.* cases\{0,1\} on backend \([a-z]*\).*/\1/p' <<<"$summary_line")
n_cases=${summary_line%% *}
gpus=$(sa_gpu_count)

if [[ "$backend" == host ]]; then
  if (( has_backend )); then
    sa_banner "backend host (requested): times are host wall-clock, not GPU times."
  elif (( gpus > 0 )); then
    sa_banner "$gpus GPU(s) listed by nvidia-smi, but shardaccum_bench sees none: this build has no CUDA" \
              "backend (preset $SA_PRESET, or nvcc not found when ${SA_BUILD_DIR#"$SA_ROOT/"}/ was configured) or CUDA cannot use the GPUs." \
              "Running the HOST backend: times are host wall-clock, not GPU times."
  else
    sa_banner "no GPU visible: running the host backend; times are host wall-clock, not GPU times." \
              "(Ranks are threads on this CPU. Bytes, memory and correctness carry over to GPUs; times do not.)"
  fi
fi

report_dir="reports/$folder"
final="$SA_ROOT/$report_dir"
# A stage left by a run that was killed (its PID is gone) is removed; a live run's is not touched.
for d in "$SA_ROOT/reports/.$folder.partial."*; do
  pid=${d#"$SA_ROOT/reports/.$folder.partial."}   # all digits: not the stage of a name that extends this one
  if [[ -d "$d" && "$pid" =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null; then
    rm -rf "$d"
    sa_say "removed ${d#"$SA_ROOT/"}, left by an earlier run of this name that failed or was stopped"
  fi
done
# The whole new report is built in $stage/reports/FOLDER (the same path under another root, so the
# report names reports/FOLDER/run.json) and swapped in at the end; an older report stays until then.
stage="$SA_ROOT/reports/.$folder.partial.$$"
rm -rf "$stage"
mkdir -p "$stage/reports/$folder"
stage_dir="$stage/reports/$folder"
[[ -e "$final" ]] && sa_say "an older report is in $report_dir/: it is replaced once this run and its report succeed"
# Relative paths when run from the repository root, so the JSON names them portably; otherwise
# absolute, and shardaccum_bench runs in the caller's folder (relative --model FILE.json).
if [[ "$PWD" == "$SA_ROOT" ]]; then out_json="${stage_dir#"$SA_ROOT/"}/run.json"; else out_json="$stage_dir/run.json"; fi
# The trace: trace.json beside run.json, where the report finds it; or the user's --trace FILE.
trace_args=()
report_trace_args=()
if [[ -n "$user_trace" ]]; then
  trace_mode=user
  report_trace_args=(--trace "$user_trace")
elif [[ "$trace_mode" != none ]]; then
  trace_args=(--trace "${out_json%run.json}trace.json")
  # The first measured step of each case (the step the report draws) unless --full-trace.
  [[ "$trace_mode" == full ]] || (( has_trace_steps )) || trace_args+=(--trace-steps 1)
fi

# The oracle checks only the last measured step here: checking every step made the 64-case host
# job about 80% slower (issue 11 item 15). An explicit --check after -- wins.
check_args=(--check last)
for a in ${bench_args[@]+"${bench_args[@]}"}; do [[ "$a" == --check || "$a" == --check=* ]] && check_args=(); done
(( ${#check_args[@]} )) && sa_say "the oracle checks the last measured step of each case (--check last; pass -- --check every for all)"
sa_say "running $n_cases cases on backend $backend; results go to $report_dir/run.json"
t_run=$SECONDS
set +e
run_child "$SA_BENCH" ${backend_args[@]+"${backend_args[@]}"} ${check_args[@]+"${check_args[@]}"} ${bench_args[@]+"${bench_args[@]}"} \
  ${trace_args[@]+"${trace_args[@]}"} --benchmark_out="$out_json" --benchmark_out_format=json
rc=$?
set -e
old_note="no report written"
[[ -e "$final" ]] && old_note="$report_dir/ is left as it was"
(( rc == 0 )) || sa_die "shardaccum_bench failed (exit $rc); $old_note"
[[ -s "$stage_dir/run.json" ]] || sa_die "shardaccum_bench exited 0 but wrote no run.json; $old_note"
sa_say "benchmark done in $(sa_elapsed "$t_run")"
# From here on the stage holds a finished run.json: a failure or a signal in what follows (the real
# systems, the report, both can take minutes) keeps it instead of deleting it with the stage.
keep_stage=1

trace_file="$stage_dir/trace.json"
[[ "$trace_mode" == user ]] && trace_file=$user_trace
if [[ "$trace_mode" != none ]]; then
  if [[ -s "$trace_file" ]]; then
    sa_say "trace: $(du -h "$trace_file" | cut -f1) (open it in ui.perfetto.dev)"
  else
    sa_warn "shardaccum_bench wrote no trace: the report has no timeline"
  fi
fi

# Case summary (one line per case name; repetitions folded).
"$PY" - "$stage_dir/run.json" <<'PYEOF' || sa_warn "could not summarise the new run.json"
import json, sys
doc = json.load(open(sys.argv[1]))
cases = {}
for b in doc.get("benchmarks", []):
    if b.get("run_type", "iteration") == "iteration":
        cases.setdefault(b.get("run_name", b.get("name")), []).append(b)
err = sum(1 for bs in cases.values() if any(b.get("error_occurred") for b in bs))
ok = sum(1 for bs in cases.values() if not any(b.get("error_occurred") for b in bs) and all(b.get("correct") == 1 for b in bs))
wrong = len(cases) - err - ok
print(f"run.sh: {len(cases)} cases on backend {doc.get('context', {}).get('backend', '?')}: "
      f"{ok} correct, {wrong} WRONG, {err} failed with an error")
if wrong:
    print("run.sh: WRONG is the oracle catching a known-incorrect strategy (offload `copy`, `copy-fsdp1` or "
          "`copy-fairscale`: FSDP1's and FairScale's overwrite; or mode `shape` with an offload; on a "
          "schedule with more than one S), as docs/DESIGN.md §3 predicts")
PYEOF

# 3b. The real systems on the same workload, beside run.json (GPUs only: they are CUDA programs).
real_inputs=()
real_failed=0
if (( real )) && [[ "$backend" == cuda && -n "$part" ]]; then
  sa_say "the real systems are not run for one part (--part $part) of a matrix: run them on the merged run.json with scripts/run_real.sh"
elif (( real )) && [[ "$backend" == cuda ]]; then
  set +e
  run_child "$SA_ROOT/scripts/run_real.sh" --bench "$SA_BENCH" "$stage_dir/run.json" "$stage_dir"
  rc=$?
  set -e
  case $rc in
    0) ;;
    3) sa_say "the real systems are not run (no CUDA torch); the report has the suite's cases only" ;;
    *) real_failed=1; sa_warn "a real system failed (its log is beside run.json); the report is written without it" ;;
  esac
  for f in "$stage_dir"/real-*.json; do
    [[ -s "$f" ]] && real_inputs+=("$report_dir/${f##*/}")
  done
elif (( real )); then
  sa_say "the real systems (PyTorch FSDP2/FSDP1) need GPUs: not run on backend $backend"
fi

# 4. The report, beside run.json (report.py keeps the files of its folder that are not its own),
# made from the stage's root so that it names reports/FOLDER/run.json, where it will be.
sa_say "writing the report ($PY scripts/report.py)"
set +e
readme=$(cd "$stage" && MPLBACKEND=Agg "$PY" "$SA_ROOT/scripts/report.py" "$report_dir/run.json" \
           ${real_inputs[@]+"${real_inputs[@]}"} \
           ${report_trace_args[@]+"${report_trace_args[@]}"} --name "$folder" --out-dir reports)
rc=$?
set -e
if (( rc != 0 )); then
  sa_die "scripts/report.py failed (exit $rc, see above); $old_note. The new results are kept in" \
         "${stage_dir#"$SA_ROOT/"}/ until $again"
fi

# 5. The swap: two renames within reports/, then the stage removed. A signal meanwhile is held
# until they are done: stopped between the renames, reports/FOLDER would be absent and the older
# report left in the stage for the next run to delete. (Killed outright between them, the old
# report is whole in $stage/old/ and the new one in $stage/reports/FOLDER/.)
pending=""
on_traps hold_signal
if [[ -e "$final" ]]; then
  mv -T "$final" "$stage/old" || sa_die "could not move the older $report_dir/ aside; it is left as it was"
fi
if ! mv -T "$stage_dir" "$final"; then
  [[ -e "$stage/old" ]] && mv -T "$stage/old" "$final"
  sa_die "could not move the new report into $report_dir/; it is kept in ${stage_dir#"$SA_ROOT/"}/"
fi
swapped=$stage
stage=""
rm -rf "$swapped"
on_traps on_signal
if [[ -n "$pending" ]]; then
  sa_warn "interrupted once the new report had replaced $report_dir/: it is whole there"
  exit "$pending"
fi
readme="$report_dir/README.md"
[[ "$trace_mode" == none ]] || trace_file=${trace_file/#"$stage_dir"/"$final"}

echo
sa_say "done in $(sa_elapsed "$t_start")"
echo "  results: $report_dir/run.json"
[[ "$trace_mode" != none && -s "$trace_file" ]] && echo "  trace:   ${trace_file#"$SA_ROOT/"}"
echo "  report:  $readme"
if [[ -n "$part" ]]; then
  echo "  part $part: when every part has run, join them with"
  echo "    python3 scripts/merge.py reports/$name.part-*-of-${part#*/}/run.json --out $name.json"
fi
if [[ "$backend" == host ]]; then
  echo "  (backend host: every time in it is host wall-clock, not GPU time)"
fi
(( real_failed )) && sa_die "a real system failed: the report above lacks it (see reports/$folder/real-*.log)"
exit 0
