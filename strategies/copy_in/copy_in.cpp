#include "strategies/copy_in/copy_in.hpp"

namespace shardaccum {

Buffer CopyIn::input(RankBackend& be, Buffer& grad, DType reduce) const {
  if (!separate_input()) return std::move(grad);
  Buffer in = be.allocate(MemSpace::device, reduce, grad.numel(), Stream::compute);
  be.convert(in, grad, Stream::compute);
  grad.reset();  // "Only after the copy-in finishes can we free the gradients" (FSDP2)
  return in;
}

void CopyIn::hold_no_sync(RankBackend& be, Buffer& grad, DType reduce) const {
  if (!separate_input() || !grad || grad.dtype() == reduce) return;
  Buffer held = be.allocate(MemSpace::device, reduce, grad.numel(), Stream::compute);
  be.convert(held, grad, Stream::compute);
  grad = std::move(held);  // the grad-dtype gradient is freed: FSDP2 sets param.grad = None
}

bool copy_in_separate(std::string_view name) {
  return CopyInRegistry::get().make(name, AxisArgs{})->separate_input();
}

bool copy_in_in_place(std::string_view name, int world_size) {
  return CopyInRegistry::get().make(name, AxisArgs{})->in_place(world_size);
}

}  // namespace shardaccum
