#include "strategies/backend/machine_facts.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>

namespace shardaccum::machine {

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

/// The leading integer of a sysfs value ("16", "-1\n"); `fallback` when there is none.
int leading_int(std::string_view s, int fallback) {
  s = trim(s);
  int v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p != s.data() ? v : fallback;
}
}  // namespace

std::string selected_choice(std::string_view line) {
  const size_t open = line.find('['),
               close = line.find(']', open == std::string_view::npos ? 0 : open);
  if (open != std::string_view::npos && close != std::string_view::npos)
    return std::string(line.substr(open + 1, close - open - 1));
  return std::string(trim(line));
}

int pcie_gen_of_speed(std::string_view speed) {
  speed = trim(speed);
  double gts = 0;
  const auto [p, ec] = std::from_chars(speed.data(), speed.data() + speed.size(), gts);
  if (ec != std::errc() || p == speed.data()) return 0;
  static const double kSpeeds[] = {2.5, 5, 8, 16, 32, 64};  // GT/s of generations 1..6
  for (int g = 0; g < 6; ++g)
    if (std::abs(gts - kSpeeds[g]) < 0.01) return g + 1;
  return 0;
}

int count_numa_nodes(const std::vector<std::string>& names) {
  return static_cast<int>(std::count_if(names.begin(), names.end(), [](const std::string& n) {
    return n.size() > 4 && n.starts_with("node") &&
           std::all_of(n.begin() + 4, n.end(), [](unsigned char c) { return std::isdigit(c); });
  }));
}

std::vector<int> parse_cpu_list(std::string_view list) {
  std::vector<int> cpus;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view part = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    const size_t dash = part.find('-');
    int lo = -1, hi = -1;
    const std::string_view a = part.substr(0, dash),
                           b = dash == std::string_view::npos ? a : part.substr(dash + 1);
    const auto ra = std::from_chars(a.data(), a.data() + a.size(), lo);
    const auto rb = std::from_chars(b.data(), b.data() + b.size(), hi);
    if (ra.ec != std::errc() || ra.ptr != a.data() + a.size() || rb.ec != std::errc() ||
        rb.ptr != b.data() + b.size() || lo < 0 || hi < lo)
      return {};
    for (int c = lo; c <= hi; ++c) cpus.push_back(c);
  }
  return cpus;
}

HostAddPlacement plan_host_add_placement(int numa_nodes, int gpu_node, const std::string& cpulist) {
  if (numa_nodes <= 1) return {{}, "not placed: " + std::to_string(numa_nodes) + " NUMA node(s)"};
  std::vector<int> cpus = gpu_node >= 0 ? parse_cpu_list(cpulist) : std::vector<int>{};
  if (cpus.empty())
    return {{},
            "not placed: the GPU's NUMA node or its cpus are unknown (" +
                std::to_string(numa_nodes) + " nodes)"};
  return {std::move(cpus), "numa node " + std::to_string(gpu_node) + " of " +
                               std::to_string(numa_nodes) + ": cpus " + cpulist};
}

HostAddPlacement host_add_placement(const std::string& bus_id, const std::string& root) {
  const int nodes = host_facts(root).at("numa_nodes").get<int>();
  const int node = pci_facts(bus_id, root).at("numa_node").get<int>();
  const std::string list = node >= 0 ? read_first_line(root + "/sys/devices/system/node/node" +
                                                       std::to_string(node) + "/cpulist")
                                     : "";
  return plan_host_add_placement(nodes, node, list);
}

uint64_t parse_cache_size(std::string_view s) {
  s = trim(s);
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end == s.data()) return 0;
  const std::string_view unit = s.substr(static_cast<size_t>(end - s.data()));
  if (unit.empty()) return n;
  if (unit == "K") return n << 10;
  if (unit == "M") return n << 20;
  if (unit == "G") return n << 30;
  return 0;
}

uint64_t last_level_cache_bytes(const std::string& root) {
  namespace fs = std::filesystem;
  int best_level = 0;
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::directory_iterator it(root + "/sys/devices/system/cpu/cpu0/cache", ec), end;
       !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("index", 0) != 0) continue;
    const int level = leading_int(read_first_line((it->path() / "level").string()), 0);
    const uint64_t size = parse_cache_size(read_first_line((it->path() / "size").string()));
    if (level > best_level && size > 0) {
      best_level = level;
      bytes = size;
    }
  }
  return bytes;
}

uint64_t stream_operand_bytes(uint64_t configured, uint64_t llc_bytes, int ranks) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  const uint64_t stream = 4 * llc_bytes / static_cast<uint64_t>(std::max(1, ranks));
  return std::max(configured, (stream + kMiB - 1) / kMiB * kMiB);
}

std::string read_first_line(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  return line;
}

nlohmann::json host_facts(const std::string& root) {
  namespace fs = std::filesystem;
  const std::string thp = root + "/sys/kernel/mm/transparent_hugepage/";
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(root + "/sys/devices/system/node", ec), end; !ec && it != end;
       it.increment(ec))
    names.push_back(it->path().filename().string());
  return {
      {"thp_enabled", selected_choice(read_first_line(thp + "enabled"))},
      {"thp_defrag", selected_choice(read_first_line(thp + "defrag"))},
      {"numa_nodes", count_numa_nodes(names)},
      {"llc_bytes", last_level_cache_bytes(root)},
      {"nvidia_driver", std::string(trim(read_first_line(root + "/proc/driver/nvidia/version")))}};
}

nlohmann::json pci_facts(const std::string& bus_id, const std::string& root) {
  std::string id = bus_id;
  std::transform(id.begin(), id.end(), id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::string dir = root + "/sys/bus/pci/devices/" + id + "/";
  const auto gen = [&](const char* f) { return pcie_gen_of_speed(read_first_line(dir + f)); };
  const auto width = [&](const char* f) { return leading_int(read_first_line(dir + f), 0); };
  return {
      {"numa_node", leading_int(read_first_line(dir + "numa_node"), -1)},
      {"pcie_gen", {{"current", gen("current_link_speed")}, {"max", gen("max_link_speed")}}},
      {"pcie_width", {{"current", width("current_link_width")}, {"max", width("max_link_width")}}}};
}

nlohmann::json machine_context(const std::vector<std::string>& bus_ids, const std::string& root) {
  const nlohmann::json h = host_facts(root);
  nlohmann::json node = nlohmann::json::array(), gen = nlohmann::json::array(),
                 width = nlohmann::json::array();
  for (const std::string& id : bus_ids) {
    const nlohmann::json p = pci_facts(id, root);
    node.push_back(p.at("numa_node"));
    gen.push_back(p.at("pcie_gen"));
    width.push_back(p.at("pcie_width"));
  }
  return {{"thp_enabled", h.at("thp_enabled")},
          {"thp_defrag", h.at("thp_defrag")},
          {"numa_nodes", h.at("numa_nodes")},
          {"llc_bytes", h.at("llc_bytes")},
          {"gpu_numa_node", node},
          {"pcie_gen", gen},
          {"pcie_width", width},
          {"gpu_clocks_mhz", nlohmann::json::array()},
          {"driver", {{"nvidia", h.at("nvidia_driver")}}}};
}

}  // namespace shardaccum::machine
