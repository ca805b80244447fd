#include "strategies/unit_grad.hpp"

namespace shardaccum {

std::string AddSite::describe() const {
  return "unit " + std::to_string(unit) + (unit_name ? " (" + *unit_name + ")" : "") +
         ", micro-batch " + std::to_string(micro_batch);
}

}  // namespace shardaccum
