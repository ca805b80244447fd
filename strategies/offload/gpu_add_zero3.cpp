// Offload `gpu-add-zero3`: DeepSpeed ZeRO-3's partition_grads with offload_optimizer (DeepSpeed
// 0.19.8, deepspeed/runtime/zero/stage3.py; docs/PRESETS.md Z4, Z5):
//  - Z4: the first S of a step (micro_step_id == 0, 2024-2028) copies the shard D2H into the CPU
//    buffer, then `grad_buffer.to(device)` straight back: a D2H and an H2D of shard*b_a;
//  - a later S (2031-2039): H2D the CPU buffer, add on the GPU, D2H the sum, as gpu-add;
//  - Z5: at the accumulation boundary (the step's last micro-batch, 2041-2045) that device copy is
//    also copied into the optimizer's fp32 gradient on the host
//    (_offload_grad_partition_at_boundary 1443-1457: `fp32_grad_tensor.copy_(grad_buffer.to(fp32),
//    non_blocking=True)`): a D2H of shard*4 bytes into a pinned fp32 buffer (UnitGrad::master),
//    kept to the step's end. The norm taken there (a device read of the shard, 1446) is not
//    modelled.
// Per step with s syncs: H2D s*shard*b_a; D2H s*shard*b_a + shard*4. On one H200 DeepSpeed 0.19.8
// moved exactly that (reports/h200-reference/real-zero3-*.json: SSSS 4P and 5P, nnnS P and 2P).
#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

class GpuAddZero3 final : public OffloadPolicy {
 public:
  bool offloaded() const override { return true; }

  void start_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum,
                   const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer& src = cast ? cast : out;
    // D2H into the CPU buffer (on the copy stream): the unit's part of grad_partitions_flat_buffer,
    // counted at its share of that one pinned tensor's power of two (zero3_pinned.hpp).
    detail::d2h_into_saved(be, u, src);
    Buffer back = be.allocate(MemSpace::device, accum, src.numel(), Stream::copy);
    be.copy(back, u.saved, Stream::copy);  // and straight back to the device (Z4)
    if (site.boundary) to_optimizer(be, u, back);
  }

  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding& binding,
                    const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer staging = detail::add_on_device(be, u, cast ? cast : out, accum, binding, site);
    if (site.boundary) to_optimizer(be, u, staging);
    return false;
  }

  bool flat_pinned() const override { return true; }

  SyncCost predicted_start(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    return {b.accum, b.accum, b.cast + b.accum, 0, true};  // the device copy back is transient
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    return {b.accum, b.accum, b.cast + b.accum, 0, false};
  }

  SyncCost predicted_boundary(uint64_t shard_numel, const DTypeTriple& t) const override {
    const uint64_t master = shard_numel * dtype_bytes(DType::fp32);
    return {0, master, t.accum != DType::fp32 ? master : 0, master, false};
  }

 private:
  // The fp32 master gradient: the device copy converted on the copy stream if it is not fp32
  // (`grad_buffer.to(dtype=fp32)`), then a D2H into pinned memory.
  static void to_optimizer(RankBackend& be, UnitGrad& u, const Buffer& device_copy) {
    Buffer cast;
    if (device_copy.dtype() != DType::fp32) {
      cast = be.allocate(MemSpace::device, DType::fp32, device_copy.numel(), Stream::copy);
      be.convert(cast, device_copy, Stream::copy);
    }
    if (!u.master)  // counted at its share of its sub-group's pinned fp32 buffer
      u.master = be.allocate_pinned_counted(DType::fp32, device_copy.numel(), Stream::copy,
                                            u.pinned_master_counted);
    be.copy(u.master, cast ? cast : device_copy, Stream::copy);
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, GpuAddZero3,
    {.name = "gpu-add-zero3",
     .description = "DeepSpeed ZeRO-3's offload: gpu-add with the first S's D2H copied straight "
                    "back to the device, and the step's last S also copied into the optimizer's "
                    "fp32 gradient on the host",
     .follows = "deepspeed/runtime/zero/stage3.py (0.19.8) partition_grads 2021-2045, "
                "_offload_grad_partition_at_boundary 1443-1457",
     .order = 22})

}  // namespace shardaccum
