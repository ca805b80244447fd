#include "strategies/offload/offload_policy.hpp"

#include <algorithm>

namespace shardaccum {

ShardBytes::ShardBytes(uint64_t shard_numel, const DTypeTriple& t)
    : accum(shard_numel * dtype_bytes(t.accum)), cast(t.reduce != t.accum ? accum : 0) {}

void OffloadPolicy::start_saved(RankBackend& be, UnitGrad& u, Buffer out, DType accum,
                                const AddSite&) const {
  if (!offloaded() && u.partition) {
    // ZeRO-3's gradient partition buffer (UnitGrad::partition): the output copied (converted)
    // into it on the comm stream, then freed (stage3.py partition_grads' grad_buffer.copy_).
    copy_or_convert(be, u.partition, out, Stream::comm);
    u.saved = std::move(u.partition);
    return;
  }
  Buffer cast = detail::cast_to_accum(be, out, accum);
  if (offloaded())
    detail::d2h_into_saved(be, u, cast ? cast : out, pinned_blocks());
  else
    u.saved = cast ? std::move(cast) : std::move(out);
}

SyncCost OffloadPolicy::predicted_start(uint64_t shard_numel, const DTypeTriple& t) const {
  const ShardBytes b(shard_numel, t);
  // Without offload the saved shard is out itself or its conversion (the model counts that).
  if (!offloaded()) return {0, 0, 0, 0, true};
  return {0, b.accum, b.cast, 0, true};
}

uint64_t pinned_block_bytes(PinnedBlocks blocks, uint64_t numel, std::span<const uint64_t> pieces,
                            uint64_t elem_bytes) {
  switch (blocks) {
  case PinnedBlocks::per_unit: return cached_host_bytes(numel * elem_bytes);
  case PinnedBlocks::per_parameter:
    return pieces.empty() ? cached_host_bytes(numel * elem_bytes)
                          : cached_host_bytes(pieces, elem_bytes);
  case PinnedBlocks::exact: break;
  }
  return numel * elem_bytes;
}

Buffer allocate_pinned(RankBackend& be, PinnedBlocks blocks, DType dtype, uint64_t numel,
                       std::span<const uint64_t> pieces, Stream s) {
  if (blocks == PinnedBlocks::exact) return be.allocate(MemSpace::pinned_host, dtype, numel, s);
  const uint64_t one[] = {numel};
  return be.allocate_host_cached(dtype, numel, s,
                                 blocks == PinnedBlocks::per_parameter && !pieces.empty()
                                     ? pieces
                                     : std::span<const uint64_t>(one));
}

namespace detail {

Buffer cast_to_accum(RankBackend& be, const Buffer& out, DType accum) {
  if (out.dtype() == accum) return {};
  Buffer cast = be.allocate(MemSpace::device, accum, out.numel(), Stream::comm);
  be.convert(cast, out, Stream::comm);
  return cast;
}

uint64_t chunk_numel(uint64_t chunk_bytes, DType accum) {
  return std::max<uint64_t>(1, chunk_bytes / dtype_bytes(accum));
}

void d2h_into_saved(RankBackend& be, UnitGrad& u, const Buffer& src, PinnedBlocks blocks) {
  // A saved shard this step did not recognise (shape on the host) is overwritten in place.
  // A flat_pinned offload's shard is counted at its share of DeepSpeed's buffer instead.
  if (!u.saved || u.saved.numel() != src.numel() || u.saved.space() != MemSpace::pinned_host)
    u.saved = u.pinned_saved_counted != 0
                  ? be.allocate_pinned_counted(src.dtype(), src.numel(), Stream::copy,
                                               u.pinned_saved_counted)
                  : allocate_pinned(be, blocks, src.dtype(), src.numel(), u.pieces, Stream::copy);
  be.wait(Stream::copy, be.record(Stream::comm));
  be.copy(u.saved, src, Stream::copy);
}

Buffer add_on_device(RankBackend& be, UnitGrad& u, const Buffer& src, DType accum,
                     const Binding& binding, const AddSite& site) {
  Buffer staging = be.allocate(MemSpace::device, accum, src.numel(), Stream::copy);
  be.copy(staging, u.saved, Stream::copy);  // H2D
  be.wait(Stream::comm, be.record(Stream::copy));
  binding.add(be, staging, src, MemSpace::device, u, site);
  be.wait(Stream::copy, be.record(Stream::comm));
  be.copy(u.saved, staging, Stream::copy);  // D2H
  return staging;
}

}  // namespace detail
}  // namespace shardaccum
