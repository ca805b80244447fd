#pragma once
// Where a buffer lives, and the direction of a counted copy (docs/DESIGN.md §4).
#include <cstdint>

namespace shardaccum {

enum class MemSpace : uint8_t { device, pinned_host };
inline const char* space_name(MemSpace s) {
  return s == MemSpace::device ? "device" : "pinned_host";
}

/// Direction of a counted copy, from the spaces of source and destination.
enum class CopyDir : uint8_t { h2d, d2h, d2d };

}  // namespace shardaccum
