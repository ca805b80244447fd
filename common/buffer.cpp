#include "common/buffer.hpp"

#include <stdexcept>
#include <string>

namespace shardaccum {

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    reset();
    owner_ = o.owner_;
    data_ = o.data_;
    space_ = o.space_;
    dtype_ = o.dtype_;
    numel_ = o.numel_;
    o.owner_ = nullptr;
    o.data_ = nullptr;
    o.numel_ = 0;
  }
  return *this;
}

Buffer Buffer::view(uint64_t offset, uint64_t numel) const {
  if (numel == 0 || offset > numel_ || numel > numel_ - offset)
    throw std::out_of_range("Buffer::view [" + std::to_string(offset) + ", +" +
                            std::to_string(numel) + ") of a buffer of " + std::to_string(numel_) +
                            " elements");
  return Buffer(nullptr, static_cast<char*>(data_) + offset * dtype_bytes(dtype_), space_, dtype_,
                numel);
}

void Buffer::reset() {
  if (owner_ && data_) owner_->release(*this);
  owner_ = nullptr;
  data_ = nullptr;
  numel_ = 0;
}

}  // namespace shardaccum
