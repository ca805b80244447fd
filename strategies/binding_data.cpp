// Binding `data`: a raw in-place add on the accumulator's storage (`saved.data += out.data`), no
// checks (FairScale, early FSDP1). A wrong operand is caught only by the backend's own guard.
#include "strategies/strategy.hpp"

namespace shardaccum {
namespace {

class DataBinding final : public Binding {
 public:
  const char* name() const override { return "data"; }
  void add(RankBackend& be, Buffer& dst, const Buffer& src, MemSpace where, UnitGrad&,
           const AddSite&) const override {
    be.add(dst, src, where, where == MemSpace::device ? Stream::compute : Stream::copy);
  }
};

}  // namespace

std::unique_ptr<Binding> make_data_binding() { return std::make_unique<DataBinding>(); }

}  // namespace shardaccum
