// Binding `data-free`: the add goes through a checked handle (`saved += out`, later FSDP1 and
// FSDP2). Like autograd's in-place add it validates the operands (memory space, element count,
// dtype promotion) and bumps the accumulator's version counter; a mismatch is a clear error.
#include <sstream>

#include "strategies/binding/binding.hpp"

namespace shardaccum {
namespace {

std::string describe(const char* what, const Buffer& b) {
  std::ostringstream s;
  s << what << " is " << space_name(b.space()) << " " << dtype_name(b.dtype()) << "[" << b.numel()
    << "]";
  return s.str();
}

class DataFreeBinding final : public Binding {
 public:
  void add(RankBackend& be, Buffer& dst, const Buffer& src, MemSpace where, UnitGrad& u,
           const AddSite& site) const override {
    const char* why = nullptr;
    if (!dst || !src)
      why = "an operand is not allocated";
    else if (!add_operand_in(dst.space(), where) || !add_operand_in(src.space(), where))
      why = "operands must both live in the memory space of the add";
    else if (dst.numel() != src.numel())
      why = "element counts differ";
    else if (dtype_bytes(dst.dtype()) < dtype_bytes(src.dtype()))
      why = "the accumulator's dtype is narrower than the addend's";
    if (why)
      throw AccumulationError(
          site.describe() + ": checked add rejected (" + why +
          "): " + (dst ? describe("accumulator", dst) : "accumulator is empty") + ", " +
          (src ? describe("addend", src) : "addend is empty") + ", add on " + space_name(where));
    be.add(dst, src, where, where == MemSpace::device ? Stream::comm : Stream::copy);
    ++u.saved_version;
  }
};

}  // namespace

SHARDACCUM_REGISTER_VALUE(
    Binding, DataFreeBinding,
    {.name = "data-free",
     .description = "a checked add that validates operands and bumps a version",
     .follows = "FSDP1 and FSDP2 (saved_grad += grad, autograd's checks)",
     .order = 20})

}  // namespace shardaccum
