#pragma once
// The registry of axis values (docs/DESIGN.md §3, §8): every value of an axis (binding, offload,
// mode, division) lives in a file of its own under strategies/<axis>/ and registers itself here
// with its name, a one-line description and the real system it follows. The CLI's help and `all`,
// the presets, the tests and the JSON context's `registry` all read it, so a new value is one new
// file. Registration runs in static initialisers: the axis folders are linked whole-archive
// (strategies/CMakeLists.txt) so that a static link keeps them.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype.hpp"

namespace shardaccum {

/// What a registered value says about itself.
struct AxisValueInfo {
  std::string name;         // as on the command line and in case names, e.g. "gpu-add"
  std::string description;  // one line, for --help and the report
  std::string
      follows;    // the real system(s) it follows, with the function, e.g. "FSDP2 foreach_reduce"
  int order = 0;  // report order within the axis (ties: by name)
};

/// The pipelined offloads' default chunk: large enough that a copy runs at the PCIe ceiling and an
/// add kernel at 0.92 of the device copy ceiling, small enough that a 256 MiB shard pipelines with
/// itself in two chunks. On one H200 (two machines, reports/h200-limit-1204g) gpu-add-pipelined's
/// adds ran at 0.915-0.921 of that ceiling in 128 MiB chunks against 0.891-0.907 in 64 MiB ones (a
/// kernel's fixed start and drain weigh less), at the same step (uniform:16x64M 337.9 ms against
/// 337.3-337.9, gpt2-xl 488.0 against 489.1-489.2, SSSS); cpu-add-pipelined's moved by -3% to +4%.
inline constexpr uint64_t kDefaultChunkBytes = uint64_t{128} << 20;

/// --host-threads auto: chosen per case (bench default_host_threads) before any AxisArgs is made,
/// which holds 0 or more.
inline constexpr int kHostThreadsAuto = -1;
/// --host-threads as the flag spells it: "auto" for kHostThreadsAuto, else the number (the CLI's
/// default text and the JSON context's `host_threads`).
inline std::string host_threads_text(int host_threads) {
  return host_threads == kHostThreadsAuto ? std::string("auto") : std::to_string(host_threads);
}

/// What a value's factory may need to know of the case.
struct AxisArgs {
  size_t units = 0;                           // flat parameters of the layout
  DTypeTriple dtypes;                         // grad-reduce-accum
  uint64_t chunk_bytes = kDefaultChunkBytes;  // the pipelined offloads' chunk (CasePlan)
  int host_threads = 0;  // cpu-add-pageable's CPU add threads (CasePlan); 0: the rank's share
};

/// One axis's values. `Interface` names its axis in `static constexpr const char* kAxis`.
template <class Interface>
class AxisRegistry {
 public:
  using Factory = std::unique_ptr<Interface> (*)(const AxisArgs&);
  struct Entry {
    AxisValueInfo info;
    Factory make = nullptr;
  };

  /// The one registry of this axis (a function-local static: safe whatever the order in which the
  /// values' static initialisers run).
  static AxisRegistry& get() {
    static AxisRegistry registry;
    return registry;
  }

  /// Registers a value; returns true so that a namespace-scope `const bool` can hold the call.
  /// Throws std::logic_error for a duplicate or empty name. (How far the backward runs ahead is
  /// the strategy's lookahead, strategies/strategy.hpp, not an axis value's.)
  bool add(AxisValueInfo info, Factory make) {
    if (info.name.empty() || find(info.name))
      throw std::logic_error(std::string(Interface::kAxis) + ": value '" + info.name +
                             "' registered twice or unnamed");
    entries_.push_back({std::move(info), make});
    std::stable_sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
      return a.info.order != b.info.order ? a.info.order < b.info.order : a.info.name < b.info.name;
    });
    return true;
  }

  /// Every value, in report order.
  const std::vector<Entry>& entries() const { return entries_; }
  std::vector<std::string> names() const {
    std::vector<std::string> n;
    for (const Entry& e : entries_) n.push_back(e.info.name);
    return n;
  }
  const Entry* find(std::string_view name) const {
    for (const Entry& e : entries_)
      if (e.info.name == name) return &e;
    return nullptr;
  }
  /// The entry of value `name`. Throws std::invalid_argument naming the flag and the values.
  const Entry& at(std::string_view name) const {
    if (const Entry* e = find(name)) return *e;
    std::string list;
    for (const Entry& e : entries_) list += (list.empty() ? "" : ", ") + e.info.name;
    throw std::invalid_argument("--" + std::string(Interface::kAxis) + ": unknown value '" +
                                std::string(name) + "' (expected " + list + ")");
  }
  /// A new instance of value `name`. Throws std::invalid_argument as at().
  std::unique_ptr<Interface> make(std::string_view name, const AxisArgs& args) const {
    return at(name).make(args);
  }

 private:
  std::vector<Entry> entries_;
};

namespace detail {
template <class Interface, class Value>
std::unique_ptr<Interface> construct(const AxisArgs& args) {
  if constexpr (std::is_constructible_v<Value, const AxisArgs&>)
    return std::make_unique<Value>(args);
  else
    return std::make_unique<Value>();
}
}  // namespace detail

}  // namespace shardaccum

/// In a value's .cpp, inside namespace shardaccum: registers class `Value` (constructible from
/// AxisArgs or by default) as a value of `Interface`'s axis with the AxisValueInfo given after it.
#define SHARDACCUM_REGISTER_VALUE(Interface, Value, ...)                                           \
  namespace {                                                                                      \
  [[maybe_unused]] const bool kRegistered##Value =                                                 \
      ::shardaccum::AxisRegistry<Interface>::get().add(                                            \
          ::shardaccum::AxisValueInfo __VA_ARGS__,                                                 \
          &::shardaccum::detail::construct<Interface, Value>);                                     \
  }
