#pragma once
// The least time a case's own work can take on this machine (docs/DESIGN.md §6 "Bound"): its
// bytes and FLOPs per rank and step, each over the ceiling the same run measured for it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/ceilings.hpp"
#include "strategies/case_plan.hpp"

namespace shardaccum {

/// What one rank moves and computes in one step, by the resource that moves it. Bytes, not GB.
struct BoundWork {
  uint64_t h2d = 0, d2h = 0;  // the analytical model's (predict); h2d with param_h2d_bytes
  uint64_t host = 0;          // CPU adds (src + 2 * dst each) + the host division's pass (r + w)
  uint64_t device = 0;        // generator, accumulate and convert kernels (the copy-in's too),
                              // device divisions, and the world-1 reduce-scatter copy (in + out)
  uint64_t link = 0;          // reduce-scatter input at world >= 2 (0 at world 1)
  double flops = 0;           // the GEMM backward's (0 with synthetic)
  // The critical path: the backward (every unit, every micro-batch, one stream, in series), then
  // what must follow the step's last backward (unit 0 of the last micro-batch, when it syncs).
  // The generator's, the copy-in's and (--param-traffic on, FSDP2) the all-gather copy-out's part
  // of `device`.
  uint64_t backward_device = 0;
  uint64_t backward_elements =
      0;  // the elements the generator writes (dyadic only: its ceiling's mode)
  uint64_t generator_device = 0;  // the generator's own reads and writes, part of backward_device
  // The host adds start only after the D2H of the first shard they add has landed, behind every
  // D2H issued before it on the one copy stream: those bytes (0 without host adds).
  uint64_t head_d2h = 0;
  // ... and after the backward that made its gradient: the GEMM FLOPs and generator elements of
  // every unit's backward up to and including that unit's (0 without host adds).
  double head_flops = 0;
  uint64_t head_elements = 0;
  uint64_t tail_rs_device = 0, tail_rs_link = 0;          // unit 0's last reduce-scatter
  uint64_t tail_device = 0, tail_d2h = 0, tail_host = 0;  // its add, D2H, CPU add and division
};

/// The bytes and FLOPs of `plan` on one of `world_size` ranks. Walks the schedule as predict does
/// (mode tracking and the offload policy decide add or start per sync); the offload values none,
/// copy, gpu-add, cpu-add, their -pipelined forms (the tail: one chunk's add) and every
/// division's passes (DivisionSteps: pre and post on the device every sync, `end` once where the
/// shard lives) are counted; an offload value it does not know adds only its copies (from
/// predict): a smaller figure, so the bound stays a lower bound. GEMM operand traffic is not
/// counted for the same reason. Throws std::invalid_argument for an unknown axis value.
BoundWork bound_work(const CasePlan& plan, int world_size);

/// One term of the bound, in ms.
struct BoundTerm {
  std::string name;  // "copy engines", "host memory", "device memory", "link", "compute",
                     // "critical path"
  double ms = 0;
};

/// The bound: the terms whose ceilings are above 0, the largest as `ms` and its name as `by`;
/// no term left (host backend, --ceilings off): `ms` empty and `by` "no ceilings".
struct Bound {
  std::vector<BoundTerm> terms;
  std::optional<double> ms;
  std::string by = "no ceilings";
};

/// The ceilings a case's bound is taken at: `c`, with host_add_gbps raised to `host_add_seen_gbps`
/// (GB/s; the fastest rate the case's own CPU adds reached, cpu_add bytes over cpu_add ms, on any
/// rank, or its host division's pass over the finalize phase) when that is higher. The host add
/// ceiling is read once per run on buffers of its own; on one H200 machine it read 58 to 133 GB/s
/// from run to run, and once 72.8 GB/s in a run whose CPU adds then ran at up to 120 GB/s
/// (reports/h200-limit), which put bound_ms above step_ms: a rate the hardware reached in the same
/// run is one it allows. host_memory_gbps is raised likewise to `host_memory_seen_gbps` (the
/// higher of what the case's own CPU adds and copies moved through host memory per ms of its step
/// and what those after the head moved per ms after it: rates it reached at least), and
/// host_add_during_d2h_gbps to `host_add_during_d2h_seen_gbps` (the rate beside D2Hs at which
/// host_after_head_ms would be the case's own step after the head: bench/bound_counters.hpp).
/// Other ceilings are returned as they are.
Ceilings bound_ceilings(Ceilings c, double host_add_seen_gbps, double host_memory_seen_gbps = 0,
                        double host_add_during_d2h_seen_gbps = 0);

/// `c` with the GEMM ceiling of `plan`'s gradient dtype set to the rate of its own layout's GEMM
/// backward alone (Ceilings::gemm_backward: flops / ms), where the run measured it for the plan's
/// layout, tokens and gradient dtype (--backward gemm); `c` as it is otherwise. The dense n x n
/// ceiling is no bound on small shapes: on one H200, fp32, T=1024, gpt2-xl's GEMM backward alone
/// ran at 40.3 TFLOP/s against 51.0 for n = 8192 (79%, reports/h200-limit-1203), and at the dense
/// rate its bound was 540 ms against a 692 ms backward (reports/h200-limit), which nothing could
/// reach. Likewise a synthetic dyadic case's generator rate (generate_gelems) is set to its own
/// layout's generator alone (Ceilings::generate_layouts: elements / ms), where the run measured it
/// for the plan's layout and gradient dtype: on one H200 gpt2-xl's compute stream worked 43.8 ms in
/// a no-shard step whose bound at the one-buffer rate was 41.5 (reports/h200-limit-1204e); how much
/// of that its 50 units' own sizes cost (each kernel ends in a partial wave) is what this measures.
Ceilings at_own_shapes(Ceilings c, const CasePlan& plan);

/// The least ms before the first CPU add can start (the critical path's head): the later of
/// head_d2h at the d2h ceiling and the backward up to the first added unit at the compute ceilings
/// of `grad` (0 where those ceilings are 0). No host byte after the head moves before it, in the
/// run as in the bound, which is what write_bound_counters' host memory rate rests on.
double host_head_ms(const BoundWork& w, const Ceilings& c, DType grad);

/// The least ms from the head's end (host_head_ms) to the last host byte: the largest of every host
/// byte at host_add; those and every copy not yet landed (H2D, D2H after head_d2h) at host_memory;
/// the D2Hs after the head at d2h; and, where host_add_during_d2h is measured, every host byte at
/// host_add plus (1 - host_add_during_d2h / host_add) ms for each ms of those D2Hs at d2h (the
/// add time-shared between alone and beside a D2H at full rate, the two rates the run measured).
/// A ceiling at 0 makes its part 0.
double host_after_head_ms(const BoundWork& w, const Ceilings& c);

/// The terms of docs/DESIGN.md §6 from `w` and the ceilings `c` (GB/s = 1e9 B/s, TFLOP/s):
/// copy engines max(H2D/h2d, D2H/d2h, (H2D+D2H)/bidir); host memory the larger of host/host_add
/// and, with CPU adds, (host+H2D+D2H)/host_memory (the adds and the DMA share host memory); device
/// memory device/device_copy; link (world >= 2) link·(N−1)/N / busbw, as nccl-tests; compute the
/// compute stream's backward in series: flops/the GEMM ceiling of `grad` + backward_elements/the
/// generator's rate (the generator follows each GEMM, and is the whole synthetic backward);
/// compute + device memory (synthetic backward only: no FLOPs, dyadic elements, and sm_overlap
/// measured) (backward_elements/the generator's rate + (device − generator_device)/device_copy) /
/// max(1, sm_overlap): the generator and the kernels beside it share the SMs no better than the
/// run measured them to (with a GEMM backward the other kernels can run beside the GEMMs, whose
/// sharing is not measured, so the term is left out);
/// critical path the larger of (the backward, then the tail) and (the later of head_d2h at d2h and
/// the backward up to the first added unit at the compute ceilings, then host_after_head_ms),
/// each part over its ceiling. A part
/// whose ceiling is 0 counts 0; a term all of whose ceilings are 0 is left out.
Bound case_bound(const BoundWork& w, const Ceilings& c, int world_size, DType grad);

}  // namespace shardaccum
