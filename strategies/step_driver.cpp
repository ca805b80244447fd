#include "strategies/step_driver.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

#include "profiling/nvtx.hpp"
#include "strategies/gemm_workspace.hpp"
#include "strategies/offload/zero3_pinned.hpp"

namespace shardaccum {

StepDriver::StepDriver(RankBackend& be, const CasePlan& plan)
    : be_(be),
      plan_(plan),
      strategy_(plan.strategy, plan.layout.units.size(), plan.dtypes, plan.chunk_bytes,
                plan.host_threads),
      buckets_(plan.reduce_bucket_elements),
      dyadic_max_(dyadic_range(plan.dtypes, plan.schedule.k(), be.world_size())),
      params_(plan.param_traffic &&
                  params_modelled(strategy_.offloaded(),
                                  copy_in_in_place(plan.strategy.copy_in, be.world_size())),
              plan.dtypes.grad, copy_in_in_place(plan.strategy.copy_in, be.world_size()),
              strategy_.offload().pinned_blocks(), strategy_.offloaded(),
              copy_in_separate(plan.strategy.copy_in)) {
  // Every case sets its grid: a case never runs on the one before it left.
  be.set_device_add_grid(plan.device_add_grid);
  be.set_comm_priority(plan.comm_priority);
  const int n = be.world_size();
  units_.resize(plan.layout.units.size());
  for (size_t i = 0; i < units_.size(); ++i) {
    UnitGrad& u = units_[i];
    u.index = static_cast<uint32_t>(i);
    u.name = plan.layout.units[i].name;
    u.numel = plan.layout.units[i].numel;
    u.padded = padded_numel(u.numel, n);
    u.shard = shard_numel(u.numel, n);
    u.pieces = param_pieces(plan.layout.units[i], n);
  }
  if (strategy_.offload().flat_pinned()) {
    std::vector<std::vector<uint64_t>> pieces;
    for (const UnitGrad& u : units_) pieces.push_back(u.pieces);
    const Zero3PinnedShares shares = zero3_pinned_shares(pieces, plan.dtypes.accum);
    for (size_t i = 0; i < units_.size(); ++i) {
      units_[i].pinned_saved_counted = shares.saved[i];
      units_[i].pinned_master_counted = shares.master[i];
    }
  }
}

void StepDriver::agree() {
  if (!be_.any_rank(!pending_error_.empty())) return;
  retire_all();  // nothing of this step stays in flight past its failure
  params_.drop_prefetch();
  if (!pending_error_.empty()) {
    std::string msg;
    msg.swap(pending_error_);
    throw AccumulationError("rank " + std::to_string(be_.rank()) + ": " + msg);
  }
  throw PeerFailure("rank " + std::to_string(be_.rank()) + ": another rank failed");
}

void StepDriver::retire_oldest() {
  be_.wait(Stream::compute, in_flight_.front().done);
  in_flight_.pop_front();  // the gradient is freed once the compute stream has waited for its RS
}

void StepDriver::retire_all() {
  // The accumulation issued after the last reduce-scatter runs on the comm stream too: wait for
  // all of it, not only the reduce-scatters' events.
  be_.wait(Stream::compute, be_.record(Stream::comm));
  in_flight_.clear();
}

void StepDriver::backward(UnitGrad& u, uint32_t step, int mb, MicroBatchMode mode) {
  if (plan_.hook_host_us > 0) {
    // The real system's hooks between units (FSDP1: the rest of _post_backward_hook, the next
    // unit's _pre_backward_hook, autograd's engine), before this unit's kernels are issued.
    nvtx::ScopedRange hooks("host hooks", be_.rank());
    be_.host_busy(plan_.hook_host_us);
  }
  strategy_.prepare_backward(u, mb, mode);
  // A no-sync gradient held in the reduce dtype (copy-in chunk-cat): the backward writes a fresh
  // grad-dtype gradient that is added into it and freed (FSDP2
  // accumulate_unsharded_grad_if_needed).
  // Likewise any gradient under --grad-accumulation autograd (AccumulateGrad's `grad += new_grad`).
  Buffer held;
  if (u.grad && (u.grad.dtype() != plan_.dtypes.grad || plan_.autograd_accumulation))
    held = std::move(u.grad);
  const bool accumulate = static_cast<bool>(u.grad);  // grad += g(mb) after an n, else grad = g(mb)
  // --param-traffic on: the unit's parameters copied in before its gradient is allocated, freed
  // once its backward is issued (FSDP reshards after the backward).
  Buffer params = params_.before_backward(be_, u);
  if (!accumulate)
    u.grad = be_.allocate(MemSpace::device, plan_.dtypes.grad, u.padded, Stream::compute);
  backward_pass(u, step, mb, accumulate);
  // The reshard, then FSDP's backward prefetch: the next unit's parameters are on their way
  // before this unit's gradient is synced (a host that then blocks on a D2H has issued them).
  params_.after_backward(be_, u, params, u.index > 0 ? &units_[u.index - 1] : nullptr);
  if (held) {
    be_.add(held, u.grad, MemSpace::device, Stream::compute);
    u.grad = std::move(held);
  }
  if (mode != MicroBatchMode::sync)
    strategy_.copy_in().hold_no_sync(be_, u.grad, plan_.dtypes.reduce);
}

void StepDriver::backward_pass(UnitGrad& u, uint32_t step, int mb, bool accumulate) {
  nvtx::PhaseRange r(Phase::backward, u.grad.bytes(), be_.rank());
  const GradKey key{plan_.seed,
                    step,
                    static_cast<uint32_t>(mb),
                    static_cast<uint32_t>(be_.rank()),
                    u.index,
                    u.numel,
                    plan_.gen,
                    dyadic_max_,
                    u.shard};
  if (plan_.backward == Backward::gemm) {
    // Allocated at the first unit, inside the step: a failure is agreed like any backward's.
    if (!workspace_)
      workspace_ = be_.allocate(MemSpace::device, plan_.dtypes.grad,
                                gemm_workspace_numel(plan_.layout, plan_.tokens, plan_.dtypes.grad),
                                Stream::compute);
    be_.gemm_backward(u.grad, plan_.layout.units[u.index], plan_.tokens, plan_.tf32, workspace_,
                      Stream::compute);
  }
  be_.generate(u.grad, key, accumulate, Stream::compute);
}

void StepDriver::join_anyway(UnitGrad& u, Buffer& in, Buffer& out) {
  try {
    if (!in && strategy_.copy_in().separate_input())
      in = be_.allocate(MemSpace::device, plan_.dtypes.reduce, u.padded, Stream::compute);
    if (!in && !u.grad)
      u.grad = be_.allocate(MemSpace::device, plan_.dtypes.grad, u.padded, Stream::compute);
    if (!out) out = be_.allocate(MemSpace::device, plan_.dtypes.reduce, u.shard, Stream::comm);
  } catch (const std::exception& e) {
    // Alone out of the collective: the peers' waits are released by this rank's failure.
    std::string msg;
    msg.swap(pending_error_);
    throw AccumulationError("rank " + std::to_string(be_.rank()) + ": " + msg +
                            " (and no scratch to join the reduce-scatter of unit " +
                            std::to_string(u.index) + ": " + e.what() + ")");
  }
}

void StepDriver::hold_in_accum(Buffer& grad) {
  if (Buffer cast = detail::cast_to_accum(be_, grad, plan_.dtypes.accum)) grad = std::move(cast);
}

void StepDriver::sync_in_place(UnitGrad& u, int mb) {
  // Only at world size 1, so there is no collective to join: a failed rank just stops here.
  if (!pending_error_.empty() || !u.grad) return;
  try {
    nvtx::PhaseRange r(Phase::accumulate, u.grad.bytes(), be_.rank());
    be_.wait(Stream::comm, be_.record(Stream::compute));  // FSDP1's post-backward stream
    strategy_.before_reduce_scatter(be_, u.grad);
    strategy_.after_reduce_scatter(be_, u.grad);
    if (strategy_.offloaded()) {
      strategy_.accumulate(be_, u, std::move(u.grad), mb, mb == plan_.schedule.k() - 1);
      return;
    }
    hold_in_accum(u.grad);
    be_.wait(Stream::compute, be_.record(Stream::comm));  // the next backward adds into it
  } catch (const std::exception& e) {
    if (pending_error_.empty()) pending_error_ = e.what();
  }
}

void StepDriver::sync(UnitGrad& u, int mb, Buffer* bucket_input) {
  if (strategy_.copy_in().in_place(be_.world_size())) return sync_in_place(u, mb);
  const Lookahead ahead = strategy_.lookahead();
  const CopyIn& copy_in = strategy_.copy_in();
  Buffer in;  // with a copy-in or a flush's interleave, the reduce-scatter's own input; else u.grad
  if (bucket_input) {
    in = std::move(*bucket_input);  // a view: u.grad, if still there, is freed after the RS
  } else if (copy_in.separate_input()) {
    // FSDP2 (_fsdp_param_group.py post_backward): the compute stream waits for the previous
    // unit's reduce-scatter and drops its input before this unit's copy-in allocates one.
    if (ahead == Lookahead::one)
      while (!in_flight_.empty()) retire_oldest();
    if (pending_error_.empty() && u.grad) {
      nvtx::PhaseRange r(Phase::accumulate, u.grad.bytes(), be_.rank());
      try {
        in = copy_in.input(be_, u.grad, plan_.dtypes.reduce);
      } catch (const std::exception& e) {
        pending_error_ = e.what();
      }
    }
  }
  Buffer out;
  if (bucket_input && in && writes_into_interleave(u)) {
    // reduce_scatter_coalesced (coalesced_collectives.py 124-131): the output is this rank's
    // chunk of the interleave itself, an in-place reduce-scatter (NCCL's recvbuff = sendbuff +
    // rank * recvcount); nothing is allocated for it.
    out = in.view(u.shard * static_cast<uint64_t>(be_.rank()), u.shard);
  } else {
    try {
      out = be_.allocate(MemSpace::device, plan_.dtypes.reduce, u.shard, Stream::comm);
    } catch (const std::exception& e) {
      if (pending_error_.empty()) pending_error_ = e.what();
    }
  }
  // Errors are agreed once per micro-batch: a failed rank goes on joining its collectives.
  if (!pending_error_.empty()) join_anyway(u, in, out);
  Buffer& input = in ? in : u.grad;
  {
    nvtx::PhaseRange r(Phase::reduce_scatter, input.bytes(), be_.rank());
    be_.wait(Stream::comm, be_.record(Stream::compute));
    // The division's passes (docs/DESIGN.md §3) on the comm stream; a failure is agreed at the
    // next agreement and this rank still joins the collective.
    const auto guarded = [this](const auto& pass) {
      if (!pending_error_.empty()) return;
      try {
        pass();
      } catch (const std::exception& e) {
        pending_error_ = e.what();
      }
    };
    guarded([&] { strategy_.before_reduce_scatter(be_, input); });
    be_.reduce_scatter(out, input, strategy_.reduce_op(be_.world_size()));
    guarded([&] { strategy_.after_reduce_scatter(be_, out); });
    in_flight_.push_back({std::move(input), be_.record(Stream::comm)});
    u.grad.reset();  // after an S the unsharded gradient is gone from the unit (held until retired)
  }
  // The lookahead (docs/DESIGN.md §2): how many reduce-scatters stay in flight as the backward
  // goes on; unbounded waits at the micro-batch's end (run_step).
  if (ahead == Lookahead::zero) retire_oldest();
  if (ahead == Lookahead::one)
    while (in_flight_.size() > 1) retire_oldest();
  if (!pending_error_.empty()) return;  // out is released: this step fails at the next agreement
  nvtx::PhaseRange r(Phase::accumulate, out.bytes(), be_.rank());
  try {
    strategy_.accumulate(be_, u, std::move(out), mb, mb == plan_.schedule.k() - 1);
  } catch (const std::exception& e) {
    if (pending_error_.empty()) pending_error_ = e.what();
  }
}

void StepDriver::sync_in_bucket(UnitGrad& u, int mb) {
  if (buckets_.overflows(u.numel)) flush_bucket(mb);
  std::optional<uint64_t> slot;
  if (bucket_buffer_ && pending_error_.empty() && u.grad)
    slot = buckets_.place(u.padded, bucket_buffer_.numel());
  if (slot) {
    // __add_grad_to_ipg_bucket: on the reduction stream, after the backward that wrote it, the
    // gradient moves into the bucket buffer and is freed (after that copy, stream-ordered).
    try {
      nvtx::PhaseRange r(Phase::accumulate, u.grad.bytes(), be_.rank());
      be_.wait(Stream::comm, be_.record(Stream::compute));
      Buffer dst = bucket_buffer_.view(*slot, u.padded);
      copy_or_convert(be_, dst, u.grad, Stream::comm);
      u.grad.reset();
    } catch (const std::exception& e) {
      pending_error_ = e.what();
      slot.reset();
    }
  }
  buckets_.add(u, u.numel, slot);
}

bool StepDriver::writes_into_interleave(const UnitGrad& u) const {
  // An offload that keeps its output past the flush (copy-fsdp1's G3) gets its own: a view of
  // the interleave would outlive it.
  return strategy_.offload().kept_bytes(u.shard, plan_.dtypes) == 0;
}

void StepDriver::flush_bucket(int mb) {
  std::vector<ReduceBuckets::Entry> bucket = buckets_.take();
  if (bucket.empty()) return;
  buckets_.before_flush(be_);
  // The interleave (reduce_scatter_coalesced's torch.cat): the bucket's gradients copied, on the
  // reduction stream, into one new buffer that the division and the reduce-scatters read; it is
  // freed once they are issued (stream-ordered). Without a bucket buffer the syncs read the
  // gradients; after a failure too (they then join with scratch, join_anyway).
  Buffer cat;
  if (bucket_buffer_ && pending_error_.empty()) {
    try {
      uint64_t total = 0;
      for (const auto& e : bucket) total += e.unit->padded;
      cat = be_.allocate(MemSpace::device, plan_.dtypes.reduce, total, Stream::comm);
      nvtx::PhaseRange r(Phase::accumulate, cat.bytes(), be_.rank());
      be_.wait(Stream::comm, be_.record(Stream::compute));  // the gradients not in the bucket
      uint64_t off = 0;
      for (const auto& e : bucket) {
        Buffer dst = cat.view(off, e.unit->padded);
        if (e.slot)
          copy_or_convert(be_, dst, bucket_buffer_.view(*e.slot, e.unit->padded), Stream::comm);
        else
          copy_or_convert(be_, dst, e.unit->grad, Stream::comm);
        off += e.unit->padded;
      }
    } catch (const std::exception& e) {
      pending_error_ = e.what();
      cat.reset();
    }
  }
  uint64_t off = 0;
  for (const auto& e : bucket) {
    if (cat) {
      Buffer in = cat.view(off, e.unit->padded);
      sync(*e.unit, mb, &in);
    } else {
      sync(*e.unit, mb);
    }
    off += e.unit->padded;
  }
  buckets_.flushed(be_.record(Stream::comm));
}

StepMetrics StepDriver::run_step(uint32_t step, bool check, OracleResult* oracle) {
  be_.begin_step();
  if (!in_flight_.empty()) retire_all();  // left by a step that ended in an exception
  buckets_.clear();
  // DeepSpeed's buffers (stage3.py), allocated at initialisation there. A failed allocation is
  // this rank's error, agreed at the next sync micro-batch, so that no peer waits in a
  // collective this rank never joins; without the bucket the syncs read the gradients.
  if (copies_into_bucket(strategy_.lookahead(), plan_.strategy.copy_in, be_.world_size())) {
    try {
      // The persistent bucket (780-784): once per case.
      if (!bucket_buffer_) {
        uint64_t total = 0;
        for (const UnitGrad& u : units_) total += u.padded;
        bucket_buffer_ =
            be_.allocate(MemSpace::device, plan_.dtypes.reduce,
                         bucket_buffer_numel(plan_.reduce_bucket_elements, total), Stream::comm);
      }
      // Without offload, the device gradient partition (UnitGrad::partition, 791): each unit's
      // part held from the step's start.
      if (!strategy_.offloaded())
        for (UnitGrad& u : units_)
          if (!u.partition)
            u.partition = be_.allocate(MemSpace::device, plan_.dtypes.accum, u.shard, Stream::comm);
    } catch (const std::exception& e) {
      if (pending_error_.empty()) pending_error_ = e.what();
    }
  }
  for (UnitGrad& u : units_) {  // likewise: kept shards of a failed micro-batch
    u.kept.reset();
    u.master.reset();
  }
  {
    const std::string label = "step " + std::to_string(step) + " " + plan_.name;
    nvtx::ScopedRange step_range(label.c_str(), be_.rank());
    for (int mb = 0; mb < plan_.schedule.k(); ++mb) {
      const MicroBatchMode mode = plan_.schedule.at(mb);
      const std::string mb_label =
          "micro-batch " + std::to_string(mb) + " " + static_cast<char>(mode);
      nvtx::ScopedRange mb_range(mb_label.c_str(), be_.rank());
      if (mode == MicroBatchMode::sync) agree();  // once per micro-batch with collectives
      try {
        if (pending_error_.empty()) params_.forward(be_, units_);
      } catch (const std::exception& e) {
        pending_error_ = e.what();
      }
      for (auto it = units_.rbegin(); it != units_.rend(); ++it) {  // backward: last unit first
        const std::string unit_label = "unit " + std::to_string(it->index) + " " + it->name;
        nvtx::ScopedRange unit_range(unit_label.c_str(), be_.rank());
        // A failure here (out of device memory) is agreed at the next micro-batch with syncs or
        // the step's end; meanwhile this rank joins the reduce-scatters (sync, join_anyway).
        try {
          if (pending_error_.empty()) backward(*it, step, mb, mode);
        } catch (const std::exception& e) {
          pending_error_ = e.what();
        }
        if (mode != MicroBatchMode::sync) continue;
        if (strategy_.lookahead() == Lookahead::buckets)
          sync_in_bucket(*it, mb);
        else
          sync(*it, mb);
      }
      // Every micro-batch with syncs ends with the compute stream waiting for all in flight, then
      // the offload's end of the backward (FSDP1 _post_backward_final_callback: copy-fsdp1).
      if (mode == MicroBatchMode::sync) {
        if (strategy_.lookahead() == Lookahead::buckets) {
          // ZeRO-3's epilogue: the rest flushed, then the host synchronises the reduction stream.
          flush_bucket(mb);
          be_.host_wait(be_.record(Stream::comm));
          buckets_.clear();
        }
        retire_all();
        try {
          strategy_.end_backward(be_, units_);
        } catch (const std::exception& e) {
          if (pending_error_.empty()) pending_error_ = e.what();
        }
      }
    }
    // In place without offload (NO_SHARD): the gradient is the saved shard, cast as at a sync.
    const bool in_place = strategy_.copy_in().in_place(be_.world_size()) && !strategy_.offloaded();
    if (in_place) be_.wait(Stream::comm, be_.record(Stream::compute));  // after a last `n` too
    for (UnitGrad& u : units_) {
      nvtx::PhaseRange r(Phase::finalize, u.saved ? u.saved.bytes() : 0, be_.rank());
      try {
        if (in_place && u.grad && pending_error_.empty()) {
          hold_in_accum(u.grad);
          u.saved = std::move(u.grad);
        }
        strategy_.finalize(be_, u);
      } catch (const std::exception& e) {
        if (pending_error_.empty()) pending_error_ = e.what();
      }
    }
  }
  StepMetrics m;
  try {
    m = be_.end_step();  // also rethrows an error of a host task (a CPU add)
  } catch (const std::exception& e) {
    if (pending_error_.empty()) pending_error_ = e.what();
  }
  agree();
  for (UnitGrad& u : units_) {
    if (check && oracle) {
      const OracleKey key{plan_.seed,
                          step,
                          static_cast<uint32_t>(plan_.schedule.k()),
                          static_cast<uint32_t>(be_.world_size()),
                          static_cast<uint32_t>(be_.rank()),
                          u.index,
                          u.numel,
                          u.shard * static_cast<uint64_t>(be_.rank()),
                          plan_.gen,
                          plan_.dtypes.grad,
                          dyadic_max_,
                          u.shard};
      if (u.saved)
        oracle->merge(be_.check_shard(u.saved, key));
      else
        oracle->nonfinite += u.shard;  // no gradient at all: as wrong as NaN
    }
    u.saved.reset();  // released (None) for the next step
    u.grad.reset();
    u.kept.reset();
    u.master.reset();
    u.partition.reset();
  }
  return m;
}

}  // namespace shardaccum
