// Offload `cpu-add-pageable` (FSDP2's accumulating copy, docs/PRESETS.md F1, F2, F4): the first S
// of a step is a non-blocking D2H into a pinned saved shard from the caching host allocator (sizes
// rounded up to a power of two); a later S copies `out` into a freshly allocated pageable buffer
// with a blocking D2H, then adds it into the saved shard on the issuing thread, so the next unit's
// backward is issued only after the add (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py
// foreach_reduce 617-638: to_accumulate_grad, non_blocking = pin_memory and not
// to_accumulate_grad, `.to("cpu")`, grad._local_tensor += new).
// Per later S: D2H shard*b_a (all of it pageable); a pageable shard alive during the add.
#include <stdexcept>
#include <string>

#include "strategies/offload/offload_policy.hpp"

namespace shardaccum {
namespace {

/// The CPU adds' threads for one add, split as PyTorch's `+=` splits it (at::parallel_for's static
/// chunks, host_split.hpp), then the rank's share and the suite's split again (even when the add
/// throws).
class AddThreads {
 public:
  AddThreads(RankBackend& be, int threads) : be_(be) {
    be_.set_cpu_add_threads(threads);
    be_.set_cpu_add_split(CpuAddSplit::torch);
  }
  ~AddThreads() {
    be_.set_cpu_add_threads(0);
    be_.set_cpu_add_split(CpuAddSplit::blocks);
  }
  AddThreads(const AddThreads&) = delete;
  AddThreads& operator=(const AddThreads&) = delete;

 private:
  RankBackend& be_;
};

class CpuAddPageable final : public OffloadPolicy {
 public:
  explicit CpuAddPageable(const AxisArgs& a) : threads_(a.host_threads) {
    if (threads_ < 0)
      throw std::invalid_argument("--host-threads " + std::to_string(threads_) +
                                  ": expected 0 (the rank's share) or more threads");
  }

  bool offloaded() const override { return true; }

  // FSDP2's first S: `.to("cpu", non_blocking=True)` into pinned memory from its caching host
  // allocator (CachingHostAllocator.h:300-302): the shared path, allocated as that allocator does.
  void start_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum,
                   const AddSite&) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    detail::d2h_into_saved(be, u, cast ? cast : out, true);
  }

  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding& binding,
                    const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer& src = cast ? cast : out;
    // A fresh pageable tensor per parameter: its pages are faulted in by the copy itself.
    Buffer fresh = be.allocate(MemSpace::pageable_host, accum, src.numel(), Stream::copy);
    be.wait(Stream::copy, be.record(Stream::comm));
    be.copy(fresh, src, Stream::copy);      // D2H, staged and synchronous in CUDA
    be.host_wait(be.record(Stream::copy));  // to_accumulate_grad: a blocking copy
    // On the issuing thread, not a host task: nothing more is issued until the add is done.
    const AddThreads team(be, threads_);
    binding.add(be, u.saved, fresh, MemSpace::pinned_host, u, site);
    return false;  // fresh is freed here, as FSDP2's temporary is
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    SyncCost c{0, b.accum, b.cast, 0, false};
    c.d2h_pageable = c.pageable_transient = b.accum;
    return c;
  }

  uint64_t saved_pinned_bytes(uint64_t shard_numel, const DTypeTriple& t) const override {
    return cached_host_bytes(shard_numel * dtype_bytes(t.accum));
  }

 private:
  int threads_;
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    OffloadPolicy, CpuAddPageable,
    {.name = "cpu-add-pageable",
     .description = "FSDP2's accumulating copy: a later S is a blocking D2H into fresh pageable "
                    "memory, then the CPU add on the issuing thread",
     .follows = "torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce "
                "617-638 (FSDP2 with CPUOffloadPolicy)",
     .order = 32})

}  // namespace shardaccum
