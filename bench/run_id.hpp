#pragma once
// The run's identity: a random UUID (version 4), made once per process, written into the JSON
// context and the trace's metadata so that the report draws a trace only beside its own run.
#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <string>

namespace shardaccum {

/// True for the 8-4-4-4-12 lowercase hex form of a UUID.
inline bool is_uuid(const std::string& s) {
  static const std::regex form("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");
  return std::regex_match(s, form);
}

/// A new random UUID: the kernel's (/proc/sys/kernel/random/uuid), else 16 bytes of
/// std::random_device formatted as version 4. Call it once per run and keep the value.
inline std::string make_run_id() {
  std::string id;
  if (std::ifstream in("/proc/sys/kernel/random/uuid"); in && std::getline(in, id) && is_uuid(id))
    return id;
  std::random_device rd;
  std::array<uint8_t, 16> b{};
  for (auto& x : b) x = static_cast<uint8_t>(rd());
  b[6] = static_cast<uint8_t>((b[6] & 0x0F) | 0x40);  // version 4
  b[8] = static_cast<uint8_t>((b[8] & 0x3F) | 0x80);  // RFC 4122 variant
  char s[37];
  std::snprintf(s, sizeof s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                b[13], b[14], b[15]);
  return s;
}

}  // namespace shardaccum
