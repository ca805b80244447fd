#include "common/buffer.hpp"

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

void Buffer::reset() {
  if (owner_ && data_) owner_->release(*this);
  owner_ = nullptr;
  data_ = nullptr;
  numel_ = 0;
}

}  // namespace shardaccum
