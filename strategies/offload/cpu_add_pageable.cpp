// Offload `cpu-add-pageable` (FSDP2's accumulating copy, docs/PRESETS.md F1, F2, F4): the first S
// of a step is a non-blocking D2H into a pinned saved shard from the caching host allocator (each
// parameter's block rounded up to a power of two); a later S copies `out`, parameter by parameter,
// into a freshly allocated pageable buffer with a blocking D2H and adds it into the saved shard on
// the issuing thread, so the next unit's backward is issued only after the adds
// (torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_reduce 617-638, a loop over
// the group's FSDPParams: to_accumulate_grad, non_blocking = pin_memory and not
// to_accumulate_grad, `.to("cpu")`, grad._local_tensor += new).
// Per later S: D2H shard*b_a (all of it pageable); one parameter's pageable buffer alive at once.
#include <algorithm>
#include <span>
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

  // FSDP2's first S is the shared path (OffloadPolicy::start_saved): `.to("cpu",
  // non_blocking=True)` into pinned memory from its caching host allocator
  // (CachingHostAllocator.h:300-302), one tensor per parameter, as pinned_blocks says.
  PinnedBlocks pinned_blocks() const override { return PinnedBlocks::per_parameter; }
  bool takes_host_threads() const override { return true; }

  bool add_to_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum, const Binding& binding,
                    const AddSite& site) const override {
    const Buffer cast = detail::cast_to_accum(be, out, accum);
    const Buffer& src = cast ? cast : out;
    be.wait(Stream::copy, be.record(Stream::comm));
    // On the issuing thread, not a host task: nothing more is issued until the adds are done.
    const AddThreads team(be, threads_);
    // Parameter by parameter, as foreach_reduce's loop: a fresh pageable tensor (its pages
    // faulted in by the copy itself, unless the allocator hands back memory it had freed: glibc
    // maps a request above its mmap threshold afresh, and that threshold rises to the largest
    // block freed, up to 32 MiB), the blocking copy, the add, and the tensor freed when the next
    // parameter's takes its name.
    const uint64_t whole[] = {src.numel()};
    const std::span<const uint64_t> pieces = pieces_of(u, src.numel(), whole);
    uint64_t off = 0;
    for (const uint64_t n : pieces) {
      Buffer fresh = be.allocate(MemSpace::pageable_host, accum, n, Stream::copy);
      be.copy(fresh, src.view(off, n), Stream::copy);  // D2H, staged and synchronous in CUDA
      be.host_wait(be.record(Stream::copy));           // to_accumulate_grad: a blocking copy
      Buffer saved = u.saved.view(off, n);
      binding.add(be, saved, fresh, MemSpace::pinned_host, u, site);
      off += n;
    }
    return false;
  }

  SyncCost predicted_add(uint64_t shard_numel, const DTypeTriple& t) const override {
    const ShardBytes b(shard_numel, t);
    SyncCost c{0, b.accum, b.cast, 0, false};
    c.d2h_pageable = b.accum;
    return c;
  }

  // One parameter's fresh tensor at a time: the largest piece.
  uint64_t pageable_transient(std::span<const uint64_t> pieces,
                              const DTypeTriple& t) const override {
    uint64_t most = 0;
    for (const uint64_t n : pieces) most = std::max(most, n);
    return most * dtype_bytes(t.accum);
  }

 private:
  /// u's pieces when they cut a shard of `numel` elements (the StepDriver's units), else `whole`.
  static std::span<const uint64_t> pieces_of(const UnitGrad& u, uint64_t numel,
                                             std::span<const uint64_t> whole) {
    uint64_t sum = 0;
    for (const uint64_t n : u.pieces) sum += n;
    return sum == numel && !u.pieces.empty() ? std::span<const uint64_t>(u.pieces) : whole;
  }

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
