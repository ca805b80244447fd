#include "strategies/model.hpp"

#include <algorithm>
#include <deque>
#include <numeric>
#include <vector>

#include "strategies/copy_in/copy_in.hpp"
#include "strategies/gemm_workspace.hpp"
#include "strategies/offload/zero3_pinned.hpp"
#include "strategies/param_traffic.hpp"
#include "strategies/reduce_buckets.hpp"

namespace shardaccum {

Prediction predict(const CasePlan& plan, int world_size, int host_task_depth) {
  const int n = world_size;
  Prediction p;
  const size_t units = plan.layout.units.size();
  const AxisArgs args{units, plan.dtypes, plan.chunk_bytes, plan.host_threads};
  auto mode = ModeRegistry::get().make(plan.strategy.mode, args);
  const auto offload = OffloadRegistry::get().make(plan.strategy.offload, args);
  const DivisionSteps div = division_steps(plan.strategy.division, n);
  const uint64_t bg = dtype_bytes(plan.dtypes.grad), br = dtype_bytes(plan.dtypes.reduce),
                 ba = dtype_bytes(plan.dtypes.accum);

  const bool copy_in = copy_in_separate(plan.strategy.copy_in);
  const bool in_place = copy_in_in_place(plan.strategy.copy_in, n);  // FSDP1's NO_SHARD
  std::vector<bool> grad_alive(units, false);
  // A gradient held in another dtype than the grad's: a no-sync one in the reduce dtype (copy-in),
  // or NO_SHARD's accumulator in the accum dtype after its first sync (in place).
  std::vector<bool> held(units, false);
  std::vector<SavedView> saved(units);  // what mode tracking may see of each unit's saved shard
  uint64_t dev = 0, pinned = 0;         // bytes alive now
  // --backward gemm: the StepDriver's workspace, alive for the whole case (a constant term).
  if (plan.backward == Backward::gemm)
    dev = gemm_workspace_numel(plan.layout, plan.tokens, plan.dtypes.grad) * bg;
  // --param-traffic on: the host parameter shards, alive for the whole case (ParamTraffic).
  // Without offload only the unsharded parameters are held (no copies, no host shards).
  const uint64_t bp = bg;  // the parameter dtype is the gradient's
  const bool params_on = plan.param_traffic && params_modelled(offload->offloaded(), in_place);
  const bool params_copied = params_on && offload->offloaded();
  const auto param_shard = [&](size_t ui) {  // what each copy moves: this rank's shard
    return params_copied ? padded_numel(plan.layout.units[ui].numel, n) / n * bp : 0;
  };
  const auto param_dev = [&](size_t ui) {  // what it lands in: the unit's unsharded parameter
    return params_on ? padded_numel(plan.layout.units[ui].numel, n) * bp : 0;
  };
  // Each unit's shard cut at its parameters (UnitGrad::pieces): the offload's pinned blocks and its
  // pageable buffers follow them.
  std::vector<std::vector<uint64_t>> pieces(units);
  for (size_t ui = 0; ui < units; ++ui) pieces[ui] = param_pieces(plan.layout.units[ui], n);
  // The host parameter shards are pinned as the offload's saved shards are (ParamTraffic).
  for (size_t ui = 0; ui < units; ++ui)
    if (params_copied)
      pinned += pinned_block_bytes(offload->pinned_blocks(), param_shard(ui) / bp, pieces[ui], bp);
  // NO_SHARD (ParamTraffic's `resident`): one device copy of every unit's parameters left by the
  // step before, each replaced by a new one at its forward and its backward.
  if (in_place)
    for (size_t ui = 0; ui < units; ++ui) dev += param_dev(ui);
  // DeepSpeed's flat pinned buffers (gpu-add-zero3): each unit counted at its share.
  const bool flat = offload->flat_pinned();
  const Zero3PinnedShares flat_shares =
      flat ? zero3_pinned_shares(pieces, plan.dtypes.accum) : Zero3PinnedShares{};
  // Lookahead::buckets with the copy-in `none` (reduce_buckets.hpp): DeepSpeed's persistent bucket
  // buffer, alive for the whole case; each gradient that fits moves into it as it arrives.
  const bool bucket_copy =
      copies_into_bucket(plan.strategy.effective_lookahead(), plan.strategy.copy_in, n);
  uint64_t bucket_numel = 0;
  if (bucket_copy) {
    uint64_t total = 0;
    for (const auto& unit : plan.layout.units) total += padded_numel(unit.numel, n);
    bucket_numel = bucket_buffer_numel(plan.reduce_bucket_elements, total);
    dev += bucket_numel * br;
  }
  std::vector<bool> in_bucket(units, false);  // the gradient waits in the bucket buffer
  // StepDriver::run_step: ZeRO-3's device gradient partition (UnitGrad::partition) held from the
  // step's start by a bucket-copying case without offload; the first S copies into it.
  const bool partition = bucket_copy && !offload->offloaded();
  if (partition)
    for (const auto& unit : plan.layout.units) dev += padded_numel(unit.numel, n) / n * ba;
  std::deque<uint64_t> pending;    // pinned stagings of host tasks that may not have run yet
  std::deque<uint64_t> in_flight;  // unsharded gradients held until their RS is waited for
  uint64_t kept = 0;  // device shards kept until the micro-batch's end (OffloadPolicy::kept_bytes)
  const Lookahead ahead = plan.strategy.effective_lookahead();
  auto retire = [&](size_t keep) {  // as StepDriver::retire_oldest, down to `keep` held
    while (in_flight.size() > keep) {
      dev -= in_flight.front();
      in_flight.pop_front();
    }
  };
  auto bump = [&] {
    p.peak_device_bytes = std::max(p.peak_device_bytes, dev);
    p.peak_pinned_bytes = std::max(p.peak_pinned_bytes, pinned);
  };
  // FSDP2's all-gather copy-out (ParamTraffic `copy_out`): the unsharded parameter allocated
  // beside the all-gather output that the unshard filled, copied into, and the output freed.
  const bool copy_out = params_on && copy_in;
  const auto unshard_out = [&](size_t ui) {
    if (!copy_out) return;
    dev += param_dev(ui);
    bump();
    dev -= param_dev(ui);
    p.param_d2d_bytes += param_dev(ui);
  };
  // NO_SHARD without offload: its gradient converted to the accum dtype, once (the converted copy
  // beside it, then the grad-dtype one freed).
  auto hold_in_accum = [&](size_t ui) {
    if (held[ui] || bg == ba) return;
    const uint64_t padded = padded_numel(plan.layout.units[ui].numel, n);
    dev += padded * ba;
    bump();
    dev -= padded * bg;
    held[ui] = true;
  };

  for (int mb = 0; mb < plan.schedule.k(); ++mb) {
    const MicroBatchMode m = plan.schedule.at(mb);
    for (size_t ui = 0; ui < units; ++ui) {  // the forward's copies: one unit's at a time
      dev += param_dev(ui);
      bump();
      unshard_out(ui);
      dev -= param_dev(ui);  // freed, or (NO_SHARD) the copy it replaces is
      p.param_h2d_bytes += param_shard(ui);
    }
    // A unit's sync: its reduce-scatter (or NO_SHARD's in-place passes) and the offload's work.
    // Inline after its backward, or (Lookahead::buckets) when its bucket is flushed.
    const auto sync_unit = [&](size_t ui, bool interleaved) {
      const uint64_t padded = padded_numel(plan.layout.units[ui].numel, n);
      const uint64_t shard = padded / n;
      const uint32_t u = static_cast<uint32_t>(ui);
      // StepDriver::writes_into_interleave: out is the rank's chunk of the interleave, no bytes.
      const uint64_t out_bytes =
          interleaved && offload->kept_bytes(shard, plan.dtypes) == 0 ? 0 : shard * br;
      if (in_place) {  // NO_SHARD: no collective; the division's passes on the gradient itself
        const uint64_t grad_bytes = padded * (held[ui] ? ba : bg);
        if (div.pre_pass) p.division_device_bytes += 2 * grad_bytes;
        if (div.post_pass) p.division_device_bytes += 2 * grad_bytes;
        if (!offload->offloaded()) {  // it stays, cast to the accum dtype once
          hold_in_accum(ui);
          return;
        }
        grad_alive[ui] = false;  // with offload it plays the output's part (its bytes: shard * br)
      } else {  // the reduce-scatter reads the gradient (or the copy-in's input) into `out`
        uint64_t input = padded * bg;  // what the reduce-scatter reads, held until it is waited for
        if (interleaved) {
          input = padded * br;  // a view of the flush's interleave, freed with it
        } else if (copy_in) {
          // the previous input dropped (lookahead 1), this one filled, the gradient freed
          if (ahead == Lookahead::one) retire(0);
          input = padded * br;
          dev += input;
          bump();
          dev -= padded * (held[ui] ? br : bg);
          held[ui] = false;
        }
        dev += out_bytes;  // out
        bump();
        p.nccl_input_bytes += input;
        ++p.reduce_scatter_calls;
        if (div.pre_pass) p.division_device_bytes += 2 * input;
        if (div.post_pass) p.division_device_bytes += 2 * shard * br;
        if (!interleaved)
          in_flight.push_back(input);  // freed when the compute stream waits for its RS
        else if (!in_bucket[ui])
          dev -= padded * bg;  // the gradient the interleave read, freed after the RS is issued
        in_bucket[ui] = false;
        grad_alive[ui] = false;
        if (ahead == Lookahead::zero) retire(0);
        if (ahead == Lookahead::one) retire(1);
      }

      const bool add = mode->has_saved_shard(u, saved[ui], shard);
      const uint64_t cast = plan.dtypes.reduce != plan.dtypes.accum ? shard * ba : 0;
      const SyncCost c = offload->predicted(add, shard, plan.dtypes);
      p.h2d_bytes += c.h2d;
      p.d2h_bytes += c.d2h;
      p.d2h_pageable_bytes += c.d2h_pageable;
      if (add)
        p.peak_pageable_bytes =
            std::max(p.peak_pageable_bytes, offload->pageable_transient(pieces[ui], plan.dtypes));
      const bool stored = c.new_saved;
      if (!offload->offloaded()) {
        if (stored && partition) {
          dev -= out_bytes;  // copied into the partition held since the step's start, and freed
        } else if (stored && cast) {  // the saved shard is a converted copy of out
          dev += cast;
          bump();
          dev -= out_bytes;
        }
        if (stored)
          saved[ui] = {true, MemSpace::device, shard};
        else
          dev -= out_bytes;  // out was added into the saved shard and freed
      } else {
        dev += c.device_transient;
        if (stored && !saved[ui].present)
          pinned += flat ? flat_shares.saved[ui]
                         : offload->saved_pinned_bytes(shard, pieces[ui], plan.dtypes);
        if (mb == plan.schedule.k() - 1) {  // the accumulation boundary: its copy and destination
          const SyncCost b = offload->predicted_boundary(shard, plan.dtypes);
          p.d2h_bytes += b.d2h;
          dev += b.device_transient;
          pinned += flat ? flat_shares.master[ui] : b.pinned_transient;  // to the step's end
          bump();
          dev -= b.device_transient;
        }
        // One host task, allocating its staging beside the stagings of the tasks still pending.
        {
          const uint64_t piece = c.pinned_transient;
          const uint64_t queued = std::accumulate(pending.begin(), pending.end(), uint64_t{0});
          pinned += piece + queued;
          bump();
          pinned -= piece + queued;
          if (piece && host_task_depth > 0) {
            pending.push_back(piece);
            if (static_cast<int>(pending.size()) > host_task_depth) pending.pop_front();
          }
        }
        dev -= c.device_transient + out_bytes;
        const uint64_t keep = offload->kept_bytes(shard, plan.dtypes);  // out or its cast
        dev += keep;
        kept += keep;
        if (stored) saved[ui] = {true, MemSpace::pinned_host, shard};
      }
      if (stored) mode->shard_saved(u);
    };
    std::vector<size_t> bucket;  // Lookahead::buckets: the open bucket's units, in order
    uint64_t bucket_elements = 0, bucket_fill = 0;
    // StepDriver::flush_bucket: with a bucket buffer the interleave of the bucket's gradients is
    // allocated, then each unit synced from it, then it is freed.
    const auto flush = [&](std::vector<size_t>& b) {
      uint64_t cat = 0;
      if (bucket_copy)
        for (size_t x : b) cat += padded_numel(plan.layout.units[x].numel, n) * br;
      dev += cat;
      bump();
      for (size_t x : b) sync_unit(x, bucket_copy);
      dev -= cat;
      b.clear();
      bucket_elements = 0;
      bucket_fill = 0;
    };
    for (size_t ui = units; ui-- > 0;) {
      const uint64_t padded = padded_numel(plan.layout.units[ui].numel, n);
      const uint32_t u = static_cast<uint32_t>(ui);
      mode->prepare_backward(u, m);
      // The backward's copy (prefetched after the previous unit's backward, ParamTraffic::
      // after_backward, but for the first unit of the backward), freed once the backward is issued.
      if (ui + 1 == units) dev += param_dev(ui);
      unshard_out(ui);
      p.param_h2d_bytes += param_shard(ui);
      // A fresh grad-dtype gradient, or one that a held gradient (reduce or accum dtype, or any
      // under --grad-accumulation autograd) takes in and frees.
      const bool fresh = held[ui] || (plan.autograd_accumulation && grad_alive[ui]);
      if (!grad_alive[ui] || fresh) dev += padded * bg;
      bump();
      // The reshard and the next unit's prefetch (ParamTraffic::after_backward): the unsharded
      // parameter freed first; NO_SHARD's forward copy replaced only after the prefetch.
      if (!in_place) dev -= param_dev(ui);
      if (ui > 0) {
        dev += param_dev(ui - 1);
        bump();
      }
      if (in_place) dev -= param_dev(ui);
      if (fresh) dev -= padded * bg;
      grad_alive[ui] = true;
      if (m != MicroBatchMode::sync) {
        if (copy_in && bg != br && !held[ui]) {  // CopyIn::hold_no_sync's converted copy
          dev += padded * br;
          bump();
          dev -= padded * bg;
          held[ui] = true;
        }
        continue;
      }

      if (ahead != Lookahead::buckets) {
        sync_unit(ui, false);
        continue;
      }
      const uint64_t numel = plan.layout.units[ui].numel;  // as ReduceBuckets counts
      if (bucket_overflows(bucket_elements, numel, plan.reduce_bucket_elements)) flush(bucket);
      if (bucket_copy && bucket_fill + padded <= bucket_numel) {  // ReduceBuckets::place
        bucket_fill += padded;
        in_bucket[ui] = true;
        dev -= padded * bg;  // moved into the bucket buffer and freed
      }
      bucket.push_back(ui);
      bucket_elements += numel;
    }
    flush(bucket);  // ZeRO-3's epilogue: the rest flushed
    retire(0);      // a micro-batch with syncs ends with the compute stream waiting for all of them
    dev -= kept;    // then OffloadPolicy::end_backward frees the kept shards
    kept = 0;
  }
  for (uint32_t u = 0; u < units; ++u) {
    if (in_place && !offload->offloaded() && grad_alive[u]) {  // the gradient is the saved shard
      hold_in_accum(u);
      saved[u] = {true, MemSpace::device, padded_numel(plan.layout.units[u].numel, n) / n};
    }
    if (div.at_end && saved[u].present)
      (saved[u].space == MemSpace::pinned_host ? p.division_host_bytes : p.division_device_bytes) +=
          2 * saved[u].numel * ba;
    mode->finalized(u);
  }
  return p;
}

}  // namespace shardaccum
