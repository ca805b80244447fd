#include "strategies/bound.hpp"

#include <algorithm>
#include <string_view>

#include "common/gemm_shape.hpp"
#include "strategies/copy_in/copy_in.hpp"
#include "strategies/model.hpp"
#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {

namespace {

/// The device and host bytes of one sync's add or start, as the cuda backend counts them
/// (accumulate_bytes / cpu_add_bytes: src + 2 * dst per add, src + dst per convert).
struct SyncBytes {
  uint64_t device = 0, host = 0;
};

SyncBytes sync_bytes(const OffloadPolicy& policy, std::string_view offload, bool add,
                     uint64_t shard, const DTypeTriple& t) {
  const uint64_t br = shard * dtype_bytes(t.reduce), ba = shard * dtype_bytes(t.accum);
  const uint64_t cast = t.reduce != t.accum ? br + ba : 0;      // out converted to the accum dtype
  if (offload == "none") return {add ? br + 2 * ba : cast, 0};  // the add reads out as it is
  if (policy.overwrites_saved() || !add) return {cast, 0};      // start_saved: the cast, then a D2H
  // The pipelined values do the same work in chunks.
  if (offload == "gpu-add" || offload == "gpu-add-pipelined") return {cast + 3 * ba, 0};
  if (offload == "cpu-add" || offload == "cpu-add-pipelined" || offload == "cpu-add-pageable")
    return {cast, 3 * ba};
  return {};  // a value this function does not know: its copies only (predict's)
}

double over(double bytes, double gbps) { return gbps > 0 ? bytes / (gbps * 1e9) * 1e3 : 0; }

}  // namespace

BoundWork bound_work(const CasePlan& plan, int world_size) {
  const int n = world_size;
  const Prediction p = predict(plan, n);
  BoundWork w;
  // The parameters' H2D (--param-traffic on) share the H2D copy engine with the gradient's.
  w.h2d = p.h2d_bytes + p.param_h2d_bytes;
  w.d2h = p.d2h_bytes;
  w.link = n >= 2 ? p.nccl_input_bytes : 0;
  // FSDP2's all-gather copy-out (--param-traffic on): read + write on the compute stream.
  w.backward_device += 2 * p.param_d2d_bytes;

  const size_t units = plan.layout.units.size();
  const AxisArgs args{units, plan.dtypes, plan.chunk_bytes, plan.host_threads};
  auto mode = ModeRegistry::get().make(plan.strategy.mode, args);
  const auto offload = OffloadRegistry::get().make(plan.strategy.offload, args);
  const std::string& name = plan.strategy.offload;
  const DivisionSteps div = division_steps(plan.strategy.division, n);
  const uint64_t bg = dtype_bytes(plan.dtypes.grad), br = dtype_bytes(plan.dtypes.reduce),
                 ba = dtype_bytes(plan.dtypes.accum);
  const bool copy_in = copy_in_separate(plan.strategy.copy_in);
  const bool in_place = copy_in_in_place(plan.strategy.copy_in, n);  // FSDP1's NO_SHARD
  std::vector<bool> grad_alive(units, false);
  uint64_t d2h_issued = 0;  // D2H bytes issued so far on the copy stream, for head_d2h
  bool host_added = false;
  // As predict: a gradient held in another dtype than the grad's, its bytes per element (0: none):
  // the reduce dtype's (copy-in, no-sync) or the accum dtype's (in place, after a sync).
  std::vector<uint64_t> held(units, 0);
  std::vector<SavedView> saved(units);  // as predict: what mode tracking sees of each saved shard
  const int k = plan.schedule.k();
  for (int mb = 0; mb < k; ++mb) {
    const MicroBatchMode m = plan.schedule.at(mb);
    for (size_t ui = units; ui-- > 0;) {
      const uint64_t padded = padded_numel(plan.layout.units[ui].numel, n), shard = padded / n;
      const uint32_t u = static_cast<uint32_t>(ui);
      mode->prepare_backward(u, m);
      // The generator writes the gradient, and reads it too when it accumulates (after an n).
      // The copy-in's converts and adds run on the compute stream in series with it: counted
      // here as the backend counts them (src + dst per convert, src + 2 * dst per add).
      const uint64_t into =
          held[ui] ? held[ui] : (plan.autograd_accumulation && grad_alive[ui] ? bg : 0);
      const uint64_t generated = padded * bg * (grad_alive[ui] && !into ? 2 : 1);
      w.backward_device += generated;
      w.generator_device += generated;
      if (into) w.backward_device += padded * (bg + 2 * into);  // held += fresh gradient
      if (plan.gen == GenMode::dyadic) w.backward_elements += padded;
      if (plan.backward == Backward::gemm)
        w.flops += gemm_flops(plan.layout.units[ui], plan.tokens);
      grad_alive[ui] = true;
      if (m != MicroBatchMode::sync) {
        if (copy_in && bg != br && !held[ui]) {
          w.backward_device += padded * (bg + br);
          held[ui] = br;
        }
        continue;
      }
      if (in_place && !offload->offloaded()) {  // NO_SHARD: the gradient stays, cast once
        const uint64_t passes = (div.pre_pass ? 2 : 0) + (div.post_pass ? 2 : 0);
        uint64_t bytes = padded * (held[ui] ? held[ui] : bg) * passes;
        if (!held[ui] && bg != ba) {
          bytes += padded * (bg + ba);
          held[ui] = ba;
        }
        w.device += bytes;
        if (mb == k - 1 && ui == 0) w.tail_device = bytes;
        saved[ui] = {true, MemSpace::device, shard};  // the step's end makes it the saved shard
        continue;
      }
      // What the reduce-scatter reads: the gradient, or the copy-in's buffer filled from it.
      const uint64_t input = padded * (copy_in ? br : bg);
      if (copy_in) w.backward_device += padded * (held[ui] ? br : bg) + input;
      grad_alive[ui] = false;
      held[ui] = 0;
      // NCCL's copy in -> out at world size 1; none in place (the gradient is the output).
      const uint64_t rs_copy = n == 1 && !in_place ? input + shard * br : 0;
      const bool add = mode->has_saved_shard(u, saved[ui], shard);
      const SyncCost c = offload->predicted(add, shard, plan.dtypes);
      SyncBytes s = sync_bytes(*offload, name, add, shard, plan.dtypes);
      // The division's device passes of this sync (pre on the gradient, post on the output).
      s.device += (div.pre_pass ? 2 * input : 0) + (div.post_pass ? 2 * shard * br : 0);
      w.device += rs_copy + s.device;
      w.host += s.host;
      if (s.host > 0 && !host_added) {  // the first host add: behind its own D2H (or first chunk)
        host_added = true;
        const bool piped = name == "cpu-add-pipelined";
        const uint64_t cn = detail::chunk_numel(plan.chunk_bytes, plan.dtypes.accum);
        w.head_d2h = d2h_issued + (piped ? std::min(c.d2h, cn * ba) : c.d2h);
        w.head_flops = w.flops;
        w.head_elements = w.backward_elements;
      }
      d2h_issued += c.d2h;
      if (c.new_saved)
        saved[ui] = {true, offload->offloaded() ? MemSpace::pinned_host : MemSpace::device, shard};
      if (c.new_saved) mode->shard_saved(u);
      if (mb == k - 1 && ui == 0) {  // the step's last backward: all of this follows it
        w.tail_rs_device = rs_copy;
        w.tail_rs_link = n >= 2 ? input : 0;
        w.tail_device = s.device;
        w.tail_d2h = c.d2h;
        w.tail_host = s.host;
        // Pipelined: the whole D2H still follows this reduce-scatter, but only the first chunk's
        // GPU add precedes it and only the last chunk's CPU add follows it.
        const uint64_t cn = detail::chunk_numel(plan.chunk_bytes, plan.dtypes.accum);
        if (add && name == "gpu-add-pipelined")
          w.tail_device = sync_bytes(*offload, name, add, std::min(cn, shard), plan.dtypes).device;
        if (add && name == "cpu-add-pipelined")
          w.tail_host =
              sync_bytes(*offload, name, add, shard - (shard - 1) / cn * cn, plan.dtypes).host;
      }
    }
  }
  // Division `end`: one pass (read + write) over every saved shard, where it lives; after the last
  // sync of the unit, so unit 0's is on the critical path too.
  if (div.at_end) {
    for (size_t ui = 0; ui < units; ++ui) {
      if (!saved[ui].present) continue;
      const uint64_t pass = 2 * saved[ui].numel * ba;
      (offload->offloaded() ? w.host : w.device) += pass;
      if (ui == 0 && plan.schedule.at(k - 1) == MicroBatchMode::sync)
        (offload->offloaded() ? w.tail_host : w.tail_device) += pass;
    }
  }
  w.device += w.backward_device;
  return w;
}

Ceilings bound_ceilings(Ceilings c, double host_add_seen_gbps, double host_memory_seen_gbps,
                        double host_add_during_d2h_seen_gbps) {
  // Only a measured ceiling is raised: with none (host backend, --ceilings off) there is no bound.
  if (c.host_add_gbps > 0) c.host_add_gbps = std::max(c.host_add_gbps, host_add_seen_gbps);
  if (c.host_memory_gbps > 0)
    c.host_memory_gbps = std::max(c.host_memory_gbps, host_memory_seen_gbps);
  if (c.host_add_during_d2h_gbps > 0)
    c.host_add_during_d2h_gbps =
        std::max(c.host_add_during_d2h_gbps, host_add_during_d2h_seen_gbps);
  return c;
}

Ceilings at_own_shapes(Ceilings c, const CasePlan& plan) {
  if (plan.backward == Backward::synthetic) {
    const GenerateLayoutCeiling* g = c.generate_of(plan.layout.name, plan.dtypes.grad);
    if (plan.gen == GenMode::dyadic && g && g->ms > 0 && g->elements > 0 && c.generate_gelems > 0)
      c.generate_gelems = static_cast<double>(g->elements) / (g->ms * 1e-3) / 1e9;
    return c;
  }
  if (plan.backward != Backward::gemm) return c;
  const GemmBackwardCeiling* g =
      c.gemm_backward_of(plan.layout.name, plan.tokens, plan.dtypes.grad);
  if (!g || g->ms <= 0 || g->flops <= 0) return c;
  (plan.dtypes.grad == DType::bf16 ? c.gemm_tflops_bf16 : c.gemm_tflops_fp32) =
      g->flops / (g->ms * 1e-3) / 1e12;
  return c;
}

namespace {

// The compute stream's backward in series at the ceilings of gradient dtype `grad`: each GEMM, then
// the generator (0 where a ceiling is 0).
double backward_at(double flops, uint64_t elements, const Ceilings& c, DType grad) {
  const double tflops = grad == DType::bf16 ? c.gemm_tflops_bf16 : c.gemm_tflops_fp32;
  return (tflops > 0 ? flops / (tflops * 1e12) * 1e3 : 0) +
         (c.generate_gelems > 0 ? static_cast<double>(elements) / c.generate_gelems * 1e-6 : 0);
}

}  // namespace

double host_head_ms(const BoundWork& w, const Ceilings& c, DType grad) {
  return std::max(over(w.head_d2h, c.d2h_gbps),
                  backward_at(w.head_flops, w.head_elements, c, grad));
}

double host_after_head_ms(const BoundWork& w, const Ceilings& c) {
  const double d2h_after = static_cast<double>(w.d2h - w.head_d2h);
  const double adds_ms = over(w.host, c.host_add_gbps);
  // Host memory shared: the adds and every copy still to land at the rate both reached at once.
  double ms = std::max(adds_ms, over(w.host + w.h2d + d2h_after, c.host_memory_gbps));
  // Time-shared: while a D2H lands the add runs at most at host_add_during_d2h, alone at host_add.
  // However the D2Hs still to land (d2h_after at the d2h ceiling) fall among the adds, each of
  // their ms costs the adds (1 - during / alone) ms of their own; D2Hs beside no add cost more (the
  // whole ms), so this is the least. Sharing host memory by rate instead (the line above) would
  // let the add take what the DMA leaves, which it did not: on one H200, with D2Hs at 33 GB/s
  // beside it, cpu-add-pipelined's add kept 99 GB/s of the 116 it ran alone, on the line between
  // alone and beside D2Hs at full rate (95), not at 116 (docs/DESIGN.md §6, reports/README.md).
  if (c.host_add_gbps > 0 && c.host_add_during_d2h_gbps > 0 && c.d2h_gbps > 0) {
    const double d2h_ms = over(d2h_after, c.d2h_gbps);
    const double slowed = std::max(0.0, 1.0 - c.host_add_during_d2h_gbps / c.host_add_gbps);
    ms = std::max({ms, d2h_ms, adds_ms + d2h_ms * slowed});
  }
  return ms;
}

Bound case_bound(const BoundWork& w, const Ceilings& c, int world_size, DType grad) {
  Bound b;
  const double h2d = static_cast<double>(w.h2d), d2h = static_cast<double>(w.d2h);
  if (c.h2d_gbps > 0 || c.d2h_gbps > 0 || c.bidir_gbps > 0)
    b.terms.push_back({"copy engines", std::max({over(h2d, c.h2d_gbps), over(d2h, c.d2h_gbps),
                                                 over(h2d + d2h, c.bidir_gbps)})});
  // Host memory: the CPU adds at their own ceiling, and everything that reads or writes host
  // memory (the adds and the DMA's H2D reads and D2H writes) at the rate both reached together.
  const double dma = static_cast<double>(w.h2d + w.d2h);
  const double host_ms = std::max(over(w.host, c.host_add_gbps),
                                  w.host > 0 ? over(w.host + dma, c.host_memory_gbps) : 0.0);
  if (c.host_add_gbps > 0) b.terms.push_back({"host memory", host_ms});
  if (c.device_copy_gbps > 0)
    b.terms.push_back({"device memory", over(w.device, c.device_copy_gbps)});
  const int n = world_size;
  // nccl-tests' busbw: the input's (N-1)/N crosses the link.
  const auto link_ms = [&](uint64_t bytes) {
    return n >= 2 ? over(static_cast<double>(bytes) * (n - 1) / n, c.reduce_scatter_busbw_gbps) : 0;
  };
  if (n >= 2 && c.reduce_scatter_busbw_gbps > 0) b.terms.push_back({"link", link_ms(w.link)});
  const double tflops = grad == DType::bf16 ? c.gemm_tflops_bf16 : c.gemm_tflops_fp32;
  const double compute_ms = backward_at(w.flops, w.backward_elements, c, grad);
  if ((w.flops > 0 && tflops > 0) || (c.generate_gelems > 0 && w.backward_elements > 0))
    b.terms.push_back({"compute", compute_ms});
  // The synthetic backward's generator is compute-bound and fills the SMs, so the copies and adds
  // beside it run only as much faster than in series as the ceiling measured (on one H200 the
  // offload-none step came near the sum of both: reports/h200-limit-1203).
  if (w.flops == 0 && w.backward_elements > 0 && c.generate_gelems > 0 && c.device_copy_gbps > 0 &&
      c.sm_overlap > 0)
    b.terms.push_back({"compute + device memory",
                       (compute_ms + over(static_cast<double>(w.device - w.generator_device),
                                          c.device_copy_gbps)) /
                           std::max(1.0, c.sm_overlap)});
  // The backward, then what only starts after the last one: each part at its own ceiling.
  const double path = std::max(over(w.backward_device, c.device_copy_gbps), compute_ms) +
                      over(w.tail_rs_device + w.tail_device, c.device_copy_gbps) +
                      link_ms(w.tail_rs_link) + over(w.tail_d2h, c.d2h_gbps) +
                      over(w.tail_host, c.host_add_gbps);
  // Host adds: none starts before the first added shard's D2H (and all before it) has landed.
  // After it, every host add, beside the D2Hs still to land (host_after_head_ms).
  const double host_path = w.host > 0 ? host_head_ms(w, c, grad) + host_after_head_ms(w, c) : 0;
  if (c.device_copy_gbps > 0 || c.d2h_gbps > 0 || c.host_add_gbps > 0 || compute_ms > 0 ||
      (n >= 2 && c.reduce_scatter_busbw_gbps > 0))
    b.terms.push_back({"critical path", std::max(path, host_path)});
  for (const BoundTerm& t : b.terms)
    if (!b.ms || t.ms > *b.ms) {
      b.ms = t.ms;
      b.by = t.name;
    }
  return b;
}

}  // namespace shardaccum
