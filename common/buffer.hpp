#pragma once
// A buffer in one memory space: move-only, returned to its owner (and poisoned) on destruction.
#include "common/dtype.hpp"
#include "common/memory_space.hpp"
#include <cstdint>
#include <utility>

namespace shardaccum {

/// What a Buffer returns itself to: the rank backend that allocated it
/// (strategies/backend/backend.hpp). An interface here so that the vocabulary does not depend on
/// the backend above it.
class Buffer;
class BufferOwner {
 public:
  virtual ~BufferOwner() = default;
  /// Frees `b`'s storage now (the arena's current bytes drop); called by Buffer::reset only.
  virtual void release(Buffer& b) noexcept = 0;
};

/// A buffer in one memory space: move-only, returned to its backend (and poisoned) on destruction.
class Buffer {
 public:
  Buffer() = default;
  Buffer(BufferOwner* owner, void* data, MemSpace space, DType dtype, uint64_t numel)
      : owner_(owner), data_(data), space_(space), dtype_(dtype), numel_(numel) {}
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  void reset();  // frees now ("really freed": the arena's current bytes drop)
  explicit operator bool() const { return data_ != nullptr; }
  void* data() const { return data_; }
  MemSpace space() const { return space_; }
  DType dtype() const { return dtype_; }
  uint64_t numel() const { return numel_; }
  uint64_t bytes() const { return numel_ * dtype_bytes(dtype_); }
  /// A non-owning view of elements [offset, offset + numel) (same space and dtype): reset frees
  /// nothing, and it is valid while this buffer lives (chunked copies and adds of one shard).
  /// Throws std::out_of_range when the range is empty or leaves the buffer.
  Buffer view(uint64_t offset, uint64_t numel) const;

 private:
  BufferOwner* owner_ = nullptr;
  void* data_ = nullptr;
  MemSpace space_ = MemSpace::device;
  DType dtype_ = DType::fp32;
  uint64_t numel_ = 0;
};

}  // namespace shardaccum
