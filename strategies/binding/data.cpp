// Binding `data`: a raw in-place add on the accumulator's storage (`saved.data += out.data`), no
// checks (FairScale, early FSDP1). A wrong operand is caught only by the backend's own guard.
#include "strategies/binding/binding.hpp"

namespace shardaccum {
namespace {

class DataBinding final : public Binding {
 public:
  void add(RankBackend& be, Buffer& dst, const Buffer& src, MemSpace where, UnitGrad&,
           const AddSite&) const override {
    be.add(dst, src, where, where == MemSpace::device ? Stream::comm : Stream::copy);
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    Binding, DataBinding,
    {.name = "data",
     .description = "raw in-place add on the saved shard's storage, no checks",
     .follows = "FairScale; early FSDP1 (param.grad.data += ...)",
     .order = 10})

}  // namespace shardaccum
