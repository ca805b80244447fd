#pragma once
// Axis `offload` (docs/DESIGN.md §3): where the add happens and what is copied when the saved shard
// lives on the host. One value per file in this folder, registered with
// SHARDACCUM_REGISTER_VALUE(OffloadPolicy, ...). The first S of a step takes the shared path here
// (a plain D2H into saved, or out kept as saved without offload); a value may override it.
#include <cstdint>
#include <span>

#include "strategies/binding/binding.hpp"
#include "strategies/registry.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

/// Bytes one sync micro-batch moves over PCIe for one unit, and the transient buffers it needs
/// beyond `out` (for the analytical model; docs/DESIGN.md §3 "Predicted bytes").
struct SyncCost {
  uint64_t h2d = 0, d2h = 0;
  uint64_t device_transient = 0, pinned_transient = 0;  // bytes alive at once during the add
  bool new_saved = false;  // out (in the accum dtype) became the saved shard, as accumulate returns
  /// Of d2h, the bytes copied into pageable host memory (cpu-add-pageable).
  uint64_t d2h_pageable = 0;
};

/// How a value's pinned host tensors are allocated, for peak_pinned_bytes: `exact` (the bytes
/// asked for: the idealised values), or through PyTorch's CachingHostAllocator, which rounds each
/// tensor up to a power of two (cached_host_bytes), with one tensor per unit (`per_unit`: FSDP1's
/// FlatParameter, `_local_shard.pin_memory()` and `_cpu_grad`, _flat_param.py
/// FlatParamHandle.init_flat_param_attributes) or one per parameter (`per_parameter`: FSDP2,
/// UnitGrad::pieces). On one H200, gpt2-xl, K=4: FSDP1 13,958,676,480 and FSDP2 18,828,787,968
/// pinned bytes at their peak (reports/h200-validation-t1024/), against 13,958,676,480 and
/// 18,818,301,952 from this rule for the parameters and gradients (12,460,889,600 unrounded).
enum class PinnedBlocks : uint8_t { exact, per_unit, per_parameter };

/// The pinned bytes a host tensor of `numel` elements of `elem_bytes` is counted as under `blocks`;
/// `pieces` (summing to numel) are used by per_parameter only.
uint64_t pinned_block_bytes(PinnedBlocks blocks, uint64_t numel, std::span<const uint64_t> pieces,
                            uint64_t elem_bytes);
/// A pinned host buffer of `numel` elements allocated as `blocks` says (RankBackend::allocate, or
/// allocate_host_cached with the pieces of per_parameter).
Buffer allocate_pinned(RankBackend& be, PinnedBlocks blocks, DType dtype, uint64_t numel,
                       std::span<const uint64_t> pieces, Stream s);

/// The sizes a SyncCost is made of, for a shard of `shard_numel` elements and dtypes `t`.
struct ShardBytes {
  uint64_t accum = 0;  // shard_numel * b_a: what every copy moves
  uint64_t cast =
      0;  // shard_numel * b_a when out must first be converted to the accum dtype, else 0
  ShardBytes(uint64_t shard_numel, const DTypeTriple& t);
};

class OffloadPolicy {
 public:
  static constexpr const char* kAxis = "offload";
  virtual ~OffloadPolicy() = default;
  /// The saved shard lives in pinned host memory.
  virtual bool offloaded() const = 0;

  /// The first S of the unit in this step (mode tracking found no saved shard to add to): `out`
  /// (device, reduce dtype, shard elements) becomes the saved shard. Default: converted to the
  /// accum dtype if needed, then kept on the device (not offloaded) or a plain D2H into a pinned
  /// saved shard (offloaded); not offloaded with a UnitGrad::partition, copied (converted) into
  /// that partition on the comm stream, which becomes the saved shard. `site`: where, and whether
  /// at the accumulation boundary (AddSite::boundary, which gpu-add-zero3 acts on).
  virtual void start_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum,
                           const AddSite& site) const;
  /// A later S: fold `out` into u.saved. Returns true when `out` instead became a new saved shard
  /// (the tracker then notes it).
  virtual bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum,
                            const Binding& binding, const AddSite& site) const = 0;

  /// What start_saved moves. Default: the D2H of the shard when offloaded, nothing otherwise.
  virtual SyncCost predicted_start(uint64_t shard_numel, const DTypeTriple& t) const;
  /// What add_to_saved moves.
  virtual SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const = 0;
  /// What the step's last sync moves beyond its start or add (the accumulation boundary): d2h its
  /// copy, device_transient a conversion alive during it, pinned_transient its destination, alive
  /// until the step's end. Default: nothing (gpu-add-zero3: the optimizer's fp32 gradient, Z5).
  virtual SyncCost predicted_boundary(uint64_t shard_numel, const DTypeTriple& t) const {
    (void)shard_numel, (void)t;
    return {};
  }
  /// How this value's pinned host tensors (its saved shards, and the parameters of
  /// --param-traffic on) are allocated. Default: exact.
  virtual PinnedBlocks pinned_blocks() const { return PinnedBlocks::exact; }
  /// True when its saved shards and fp32 master gradients stand for DeepSpeed's flat pinned
  /// buffers: counted at UnitGrad::pinned_saved_counted and pinned_master_counted, the unit's
  /// shares (zero3_pinned.hpp), which StepDriver and the model compute. Default false.
  virtual bool flat_pinned() const { return false; }
  /// True when its CPU add runs with --host-threads' intra-op threads (AxisArgs::host_threads), as
  /// FSDP2's `+=` on the issuing thread does (cpu-add-pageable); the case's label then says how
  /// many. Default false: the suite's own adds take --threads.
  virtual bool takes_host_threads() const { return false; }
  /// The pinned bytes an offloaded saved shard of `shard_numel` elements, cut into `pieces`
  /// (UnitGrad::pieces), is counted as.
  uint64_t saved_pinned_bytes(uint64_t shard_numel, std::span<const uint64_t> pieces,
                              const DTypeTriple& t) const {
    return pinned_block_bytes(pinned_blocks(), shard_numel, pieces, dtype_bytes(t.accum));
  }
  /// The largest pageable host buffer alive at once during one add_to_saved of a shard cut into
  /// `pieces`, for peak_pageable_bytes. Default 0 (no pageable memory).
  virtual uint64_t pageable_transient(std::span<const uint64_t> pieces,
                                      const DTypeTriple& t) const {
    (void)pieces, (void)t;
    return 0;
  }

  /// The device bytes of one sync's shard kept alive (UnitGrad::kept) until the end of its backward
  /// micro-batch, for the model's peak. Default 0: freed after its copy.
  virtual uint64_t kept_bytes(uint64_t shard_numel, const DTypeTriple& t) const {
    (void)shard_numel, (void)t;
    return 0;
  }
  /// The end of a backward micro-batch with syncs, after the compute stream has waited for every
  /// reduce-scatter and what followed it on the comm stream (StepDriver::retire_all). Default:
  /// nothing; copy-fsdp1 synchronises the host and frees the kept shards (docs/PRESETS.md G3, G4).
  virtual void end_backward(RankBackend& be, std::span<UnitGrad> units) const {
    (void)be, (void)units;
  }

  /// Every S overwrites the saved shard, whatever mode tracking says (OverwriteSaved: `copy` and
  /// the systems that behave so): the oracle's bound and the step's work count each S as a start.
  virtual bool overwrites_saved() const { return false; }

  /// Dispatches on `add` (mode tracking's answer), as the strategy does.
  SyncCost predicted(bool add, uint64_t shard_numel, const DTypeTriple& t) const {
    return add ? predicted_add(shard_numel, t) : predicted_start(shard_numel, t);
  }
};

/// The base of the values whose every S is a start_saved over the previous saved shard: the
/// known-incorrect overwrite of FSDP1 and FairScale with CPU offload (pytorch#73784), which loses
/// every sync micro-batch but the last. A later S moves what the first does.
class OverwriteSaved : public OffloadPolicy {
 public:
  bool overwrites_saved() const final { return true; }
  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding&,
                    const AddSite& site) const final {
    start_saved(be, u, std::move(out), accum, site);
    return true;
  }
  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const final {
    return predicted_start(shard_numel, t);
  }
};

using OffloadRegistry = AxisRegistry<OffloadPolicy>;

namespace detail {
/// `out` converted to the accum dtype on the device (copies move b_a bytes, docs/DESIGN.md §3), or
/// an empty buffer when out already has it. The caller keeps both alive until its copies are done.
Buffer cast_to_accum(RankBackend& be, const Buffer& out, DType accum);

/// The elements of one pipelined chunk: chunk_bytes of the accum dtype, at least one.
uint64_t chunk_numel(uint64_t chunk_bytes, DType accum);

/// Plain D2H of `src` into u.saved (allocated in pinned memory if absent or not a pinned shard of
/// src's size, as `blocks` says, or at UnitGrad::pinned_saved_counted bytes when that is set: a
/// flat_pinned offload): the shared first S of an offloaded step, and `copy`'s every S.
void d2h_into_saved(RankBackend& be, UnitGrad& u, const Buffer& src,
                    PinnedBlocks blocks = PinnedBlocks::exact);
/// gpu-add's later S: H2D u.saved into a device staging buffer (accum dtype, src's elements), add
/// `src` into it on the comm stream (binding), D2H the sum back over u.saved. Returns the staging
/// buffer, the sum on the device (gpu-add-zero3 copies it on at the boundary). src must stay alive
/// until then; errors are the binding's.
Buffer add_on_device(RankBackend& be, UnitGrad& u, const Buffer& src, DType accum,
                     const Binding& binding, const AddSite& site);
}  // namespace detail

}  // namespace shardaccum
