#!/usr/bin/env bash
# Profiles chosen cases under Nsight Systems, writes nsys' summaries beside the report and checks
# the memcpy bytes and the times nsys saw against the suite's own counters. See --help.
set -euo pipefail

SA_PROG=profile.sh
# shellcheck source=scripts/common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# Mandatory on the GPU machines (common.sh exports them too; never unset them).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

usage() {
  cat <<'EOF'
usage: scripts/profile.sh --filter REGEX [--name NAME] [--no-build] [--bench PATH] [--nsys-deps DIR]
                          [-- SHARDACCUM_BENCH_FLAGS...]

Profiles the cases whose names match REGEX (Google Benchmark's --benchmark_filter over names such
as accum/model:llama2-7b/world:2/schedule:nSnS/binding:data/offload:cpu-add/mode:flag/...) with
Nsight Systems, one measured step per case and no warm-up:

  nsys profile -t cuda,nvtx,osrt -o reports/profiles/NAME \
      shardaccum_bench --benchmark_filter=REGEX --warmup 0 --steps 1 --cupti off --ceilings off \
                       --benchmark_out=reports/profiles/NAME.bench.json [FLAGS...]
  nsys stats -r nvtx_sum,nvtx_gpu_proj_sum,cuda_gpu_kern_sum,cuda_gpu_mem_size_sum --format csv ...

and writes beside reports/profiles/NAME.nsys-rep: NAME_<report>.csv (the four summaries),
NAME.sqlite (nsys export), NAME.bench.json (the suite's counters of the same run) and
NAME.bytes.txt, which ends with the line

  nsys memcpy bytes: H2D X, D2H Y; suite counters: H2D X', D2H Y' -> MATCH|MISMATCH

X and Y are the bytes of the memcpys nsys traced whose CUDA API call was issued inside a `step`
NVTX range of domain shardaccum (the measured steps; not NCCL set-up, ceilings or the oracle's
read-back), summed over ranks; X' and Y' are h2d_bytes and d2h_bytes (per step, per rank) times the
measured steps and the world size. The whole-process totals of cuda_gpu_mem_size_sum are printed
above that line for reference (MB resolution; they include NCCL set-up and the oracle).

NAME.times.json: per case, the times nsys saw against the suite's counters of the same step (ms
per step, max over ranks), a list of {case, figure, nsys_ms, suite_ms, ok}, also printed:
  nccl      GPU work launched inside reduce_scatter NVTX ranges (NCCL kernels; at world 1 NCCL's
            reduce-scatter is a device-to-device memcpy, not a kernel)   against nccl_ms
  backward  kernels launched inside backward ranges (generator, GEMMs)   against backward_ms
  h2d, d2h  memcpys of that kind launched in the step                    against h2d_ms, d2h_ms
  cpu_add   the host task's cpu_add NVTX ranges of the step              against cpu_add_ms
  step      the `step` NVTX range joined with the GPU work launched in it and its cpu_add
            ranges, first start to last end (host tasks count)           against step_ms
The suite's shardaccum_nccl_gate / shardaccum_nccl_stamp kernels count in no figure. A figure off
by more than 5% (or 0.2 ms for small ones) fails the check. The SQL and arithmetic are in
scripts/shardaccum_report/nsys_times.py.

--cupti off: CUPTI takes one subscriber and nsys is it. --ceilings off: the cuda backend skips its
start-up ceiling copies so that the whole-process totals stay close to the cases' own.

options:
  --filter REGEX   the cases to profile (required; e.g. 'offload:cpu-add/mode:flag')
  --name NAME      report name under reports/profiles/ (letters, digits, '.', '_', '-';
                   default profile-YYYYmmdd-HHMMSS); an older report of that name is replaced
  --no-build       use the existing binary (default: build shardaccum_bench in build/ first)
  --bench PATH     the shardaccum_bench to profile (default build/bench/shardaccum_bench)
  --nsys-deps DIR  libdw/libelf for nsys' importer, made by scripts/nsys-deps.sh DIR
                   (also: NSYS_DEPS=DIR): DIR/usr/lib/x86_64-linux-gnu joins LD_LIBRARY_PATH
  -h, --help       this text
  -- FLAGS...      passed to shardaccum_bench (--model, --world-size, --dtype, ...); --warmup,
                   --steps, --cupti, --ceilings and --benchmark_out are set by this script

nsys is taken from $NSYS, else from PATH, else from /opt/nvidia/nsight-systems/*/bin/nsys or
/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys.

examples:
  scripts/profile.sh --filter 'offload:cpu-add/mode:flag' -- --model llama2-7b --world-size 2 --schedule nSnS
  NSYS_DEPS=$PWD/.deps/nsys scripts/profile.sh --filter 'preset' --name zero3 -- --preset zero3

exit status: 0 profiled, summaries written, the bytes MATCH and every time agrees; 3 the bytes
MISMATCH (everything else was written; times may be off too: see NAME.times.json); 4 the bytes
MATCH but a time is off; 1 nsys not found, the run or nsys failed, or nsys saw no step of any case;
2 bad arguments.
EOF
}

filter=""
name=""
build=1
bench="${SHARDACCUM_BENCH:-}"
deps="${NSYS_DEPS:-}"
bench_args=()
need_value() { [[ $# -ge 2 && -n "$2" ]] || SA_DIE_CODE=2 sa_die "$1 needs a value (see --help)"; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --filter) need_value "$@"; filter=$2; shift 2 ;;
    --filter=*) filter=${1#--filter=}; shift ;;
    --name) need_value "$@"; name=$2; shift 2 ;;
    --name=*) name=${1#--name=}; shift ;;
    --no-build) build=0; shift ;;
    --bench) need_value "$@"; bench=$2; shift 2 ;;
    --bench=*) bench=${1#--bench=}; shift ;;
    --nsys-deps) need_value "$@"; deps=$2; shift 2 ;;
    --nsys-deps=*) deps=${1#--nsys-deps=}; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; bench_args+=("$@"); break ;;
    *) SA_DIE_CODE=2 sa_die "unknown option '$1' (shardaccum_bench flags go after --; see --help)" ;;
  esac
done

[[ -n "$filter" ]] || SA_DIE_CODE=2 sa_die "--filter REGEX is required: which cases to profile (see --help)"
[[ -n "$name" ]] || name="profile-$(date +%Y%m%d-%H%M%S)"
[[ "$name" =~ ^[A-Za-z0-9_][A-Za-z0-9._-]*$ ]] \
  || SA_DIE_CODE=2 sa_die "--name '$name': use letters, digits, '.', '_' and '-' (one file name)"
for a in ${bench_args[@]+"${bench_args[@]}"}; do
  case "$a" in
    --warmup|--warmup=*|--steps|--steps=*|--cupti|--cupti=*|--ceilings|--ceilings=*|--benchmark_out*|--benchmark_filter*|--list)
      SA_DIE_CODE=2 sa_die "'$a': profile.sh sets --warmup 0 --steps 1 --cupti off --ceilings off, the filter and the output itself" ;;
  esac
done

# --- nsys and its importer's libraries --------------------------------------------------------------
find_nsys() {
  if [[ -n "${NSYS:-}" ]]; then echo "$NSYS"; return; fi
  if command -v nsys >/dev/null 2>&1; then command -v nsys; return; fi
  local c
  for c in /opt/nvidia/nsight-systems/*/bin/nsys /opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys; do
    [[ -x "$c" ]] && { echo "$c"; return; }
  done
  return 1
}
[[ -z "${NSYS:-}" || -x "${NSYS:-}" ]] || sa_die "NSYS=$NSYS is not an executable"
nsys_bin=$(find_nsys) || sa_die "Nsight Systems (nsys) not found: not in \$NSYS, not on PATH, not under" \
  "/opt/nvidia/nsight-systems/*/bin or /opt/nvidia/nsight-compute/*/host/target-linux-x64." \
  "Install Nsight Systems or set NSYS=/path/to/nsys. (On a machine without a GPU there is nothing to profile:" \
  "use shardaccum_bench --trace FILE.json for the built-in trace instead.)"
if [[ -n "$deps" ]]; then
  [[ -d "$deps/usr/lib/x86_64-linux-gnu" ]] \
    || sa_die "--nsys-deps / NSYS_DEPS '$deps' has no usr/lib/x86_64-linux-gnu (make it with scripts/nsys-deps.sh DIR)"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
sa_say "nsys: $nsys_bin ($("$nsys_bin" --version 2>/dev/null | head -n 1 || echo 'version unknown'))"

# --- the binary ---------------------------------------------------------------------------------------
if [[ -z "$bench" ]]; then
  bench="$SA_BENCH"
  (( build )) && sa_build shardaccum_bench
fi
[[ -x "$bench" ]] || sa_die "no shardaccum_bench at $bench (build it, or give --bench PATH)"
command -v python3 >/dev/null 2>&1 || sa_die "python3 is needed to read the summaries"

# The cases must exist and the flags must be valid before nsys starts.
list_out=$(mktemp)
trap 'rm -f "$list_out"' EXIT
if ! "$bench" --list "--benchmark_filter=$filter" ${bench_args[@]+"${bench_args[@]}"} >"$list_out" 2>&1; then
  cat "$list_out" >&2
  SA_DIE_CODE=2 sa_die "shardaccum_bench rejected the arguments (see above)"
fi
backend=$(sed -n 's/.* cases on backend \([a-z]*\).*/\1/p' "$list_out" | tail -n 1)
n_match=$(grep -E -c -- "$filter" "$list_out" || true)
(( n_match > 0 )) || SA_DIE_CODE=2 sa_die "--filter '$filter' matches none of the cases shardaccum_bench lists (try: $bench --list ${bench_args[*]-})"
[[ "$backend" == cuda ]] || sa_warn "backend is '${backend:-?}', not cuda: nsys will see no GPU work"

out_dir="$SA_ROOT/reports/profiles"
mkdir -p "$out_dir"
base="$out_dir/$name"
rm -f "$base.nsys-rep" "$base.qdstrm" "$base.sqlite" "$base".bench.json "$base".bytes.txt "$base".times.json \
  "$base"_*.csv

# --- profile --------------------------------------------------------------------------------------------
sa_say "profiling $n_match case(s) matching '$filter' -> reports/profiles/$name.nsys-rep"
t0=$SECONDS
set +e
"$nsys_bin" profile -t cuda,nvtx,osrt --force-overwrite true -o "$base" \
  "$bench" "--benchmark_filter=$filter" --warmup 0 --steps 1 --cupti off --ceilings off \
  "--benchmark_out=$base.bench.json" --benchmark_out_format=json ${bench_args[@]+"${bench_args[@]}"}
rc=$?
set -e
(( rc == 0 )) || sa_die "nsys profile / shardaccum_bench failed (exit $rc; see above)"
if [[ ! -s "$base.nsys-rep" ]]; then
  if [[ -e "$base.qdstrm" ]]; then
    sa_die "nsys wrote $base.qdstrm but no .nsys-rep: its importer failed (on the GPU machines it needs libdw:" \
           "run scripts/nsys-deps.sh DIR on the development machine, carry DIR, pass --nsys-deps DIR)"
  fi
  sa_die "nsys wrote no $base.nsys-rep"
fi
[[ -s "$base.bench.json" ]] || sa_die "shardaccum_bench wrote no $base.bench.json"
sa_say "profiled in $(sa_elapsed "$t0")"

# --- summaries ----------------------------------------------------------------------------------------
"$nsys_bin" export --type sqlite --force-overwrite true -o "$base.sqlite" "$base.nsys-rep" >/dev/null \
  || sa_die "nsys export --type sqlite failed (see above)"
"$nsys_bin" stats -r nvtx_sum,nvtx_gpu_proj_sum,cuda_gpu_kern_sum,cuda_gpu_mem_size_sum --format csv \
  --force-export false -o "$base" "$base.sqlite" >/dev/null \
  || sa_die "nsys stats failed (see above)"
for r in nvtx_sum nvtx_gpu_proj_sum cuda_gpu_kern_sum cuda_gpu_mem_size_sum; do
  [[ -e "${base}_$r.csv" ]] || sa_warn "nsys stats wrote no ${name}_$r.csv"
done

# --- bytes: nsys against the suite's counters -------------------------------------------------------
set +e
python3 - "$base.sqlite" "$base.bench.json" "${base}_cuda_gpu_mem_size_sum.csv" >"$base.bytes.txt" <<'PY'
import csv, json, re, sqlite3, sys

db_path, bench_path, mem_csv = sys.argv[1:4]
H2D, D2H = 1, 2  # CUPTI_ACTIVITY_MEMCPY_KIND_HTOD / DTOH (nsys' copyKind)

# The suite: h2d_bytes / d2h_bytes are per measured step and per rank (ranks move the same bytes);
# every iteration entry ran `iterations` measured steps (warm-up 0) on `world` ranks.
doc = json.load(open(bench_path))
want = {H2D: 0, D2H: 0}
cases = 0
for b in doc.get("benchmarks", []):
    if b.get("run_type", "iteration") != "iteration":
        continue
    if b.get("error_occurred"):
        print(f"note: case failed, not counted: {b.get('name')}: {b.get('error_message', '')}")
        continue
    m = re.search(r"/world:(\d+)/", b["name"])
    world = int(m.group(1)) if m else 1
    steps = int(b.get("iterations", 1))
    want[H2D] += round(b.get("h2d_bytes", 0) * steps * world)
    want[D2H] += round(b.get("d2h_bytes", 0) * steps * world)
    cases += 1
if cases == 0:
    print("no case ran successfully: nothing to compare")
    sys.exit(1)

# Whole-process totals as nsys' report gives them (MB, rounded): for reference.
try:
    with open(mem_csv, newline="") as f:
        rows = list(csv.DictReader(f))
    tot = {r.get("Operation", "?"): r.get("Total (MB)", "?") for r in rows}
    print("nsys cuda_gpu_mem_size_sum, whole process (incl. NCCL set-up, oracle read-back): "
          + ", ".join(f"{k} {v} MB" for k, v in tot.items()))
except OSError as e:
    print(f"note: no cuda_gpu_mem_size_sum summary ({e})")

# nsys: memcpys whose API call was issued inside a `step` range (domain shardaccum) of its thread.
con = sqlite3.connect(db_path)
tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
if "CUPTI_ACTIVITY_KIND_MEMCPY" not in tables or "NVTX_EVENTS" not in tables:
    print(f"nsys saw no memcpy or no NVTX range (tables: {sorted(tables)})")
    got = {H2D: 0, D2H: 0}
else:
    api = [t for t in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER") if t in tables]
    # A range's name is in `text`, or in StringIds through `textId` (registered or deduplicated).
    text = "COALESCE(n.text, (SELECT value FROM StringIds WHERE id = n.textId))" if "StringIds" in tables else "n.text"
    domain_ids = [r[0] for r in con.execute(
        f"SELECT n.domainId FROM NVTX_EVENTS n WHERE n.eventType = 75 AND {text} = 'shardaccum'")]
    step_filter = f"n.eventType = 59 AND {text} LIKE 'step %'"
    if domain_ids:
        step_filter += " AND n.domainId IN (%s)" % ",".join(str(int(d)) for d in domain_ids)
    calls = " UNION ALL ".join(f"SELECT correlationId, globalTid, start FROM {t}" for t in api)
    query = f"""
        WITH steps AS (SELECT n.start, n.end, n.globalTid FROM NVTX_EVENTS n WHERE {step_filter}),
             calls AS ({calls})
        SELECT m.copyKind, SUM(m.bytes), COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m
        JOIN calls c ON c.correlationId = m.correlationId
        WHERE EXISTS (SELECT 1 FROM steps s WHERE s.globalTid = c.globalTid
                      AND c.start >= s.start AND c.start < s.end)
        GROUP BY m.copyKind"""
    got = {H2D: 0, D2H: 0}
    n_steps = con.execute(f"SELECT COUNT(*) FROM NVTX_EVENTS n WHERE {step_filter}").fetchone()[0]
    print(f"step ranges found: {n_steps}")
    for kind, total, count in con.execute(query):
        if kind in got:
            got[kind] = int(total)
    all_rows = {k: int(t) for k, t in con.execute(
        "SELECT copyKind, SUM(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY copyKind")}
    print(f"nsys memcpy bytes, whole process: H2D {all_rows.get(H2D, 0)}, D2H {all_rows.get(D2H, 0)}")

verdict = "MATCH" if got == want else "MISMATCH"
print(f"nsys memcpy bytes: H2D {got[H2D]}, D2H {got[D2H]}; "
      f"suite counters: H2D {want[H2D]}, D2H {want[D2H]} -> {verdict}")
sys.exit(0 if verdict == "MATCH" else 3)
PY
cmp_rc=$?
set -e
cat "$base.bytes.txt"
echo

# --- times: nsys against the suite's counters, per case and figure --------------------------------
set +e
python3 "$SA_ROOT/scripts/shardaccum_report/nsys_times.py" "$base.sqlite" "$base.bench.json" "$base.times.json"
times_rc=$?
set -e
echo
sa_say "done in $(sa_elapsed "$t0")"
echo "  report:    reports/profiles/$name.nsys-rep (open in Nsight Systems)"
echo "  summaries: reports/profiles/${name}_{nvtx_sum,nvtx_gpu_proj_sum,cuda_gpu_kern_sum,cuda_gpu_mem_size_sum}.csv"
echo "  counters:  reports/profiles/$name.bench.json; bytes check: reports/profiles/$name.bytes.txt"
echo "  times:     reports/profiles/$name.times.json"
case $cmp_rc in
  0) ;;
  3) sa_warn "nsys and the suite's counters disagree on the memcpy bytes (see above)"; exit 3 ;;
  *) sa_die "could not compare the bytes (python exit $cmp_rc; see $base.bytes.txt)" ;;
esac
case $times_rc in
  0) exit 0 ;;
  4) sa_warn "nsys and the suite's counters disagree on a time (see the table above)"; exit 4 ;;
  *) sa_die "could not compare the times (python exit $times_rc; see above)" ;;
esac
