#pragma once
// What the machine says that explains a copy or host-add figure (docs/DESIGN.md §6): transparent
// huge pages, NUMA nodes, a GPU's PCIe link and node, the NVIDIA driver, read from sysfs and
// /proc. Both backends' contexts; the parsers are pure so that tests can feed them strings.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace shardaccum::machine {

/// The selected value of a sysfs choice line: "always [madvise] never" -> "madvise"; the trimmed
/// line when it has no brackets; "" for an empty line.
std::string selected_choice(std::string_view line);

/// The PCIe generation of a link speed as sysfs writes it ("16.0 GT/s PCIe" -> 4, "2.5 GT/s" ->
/// 1, up to 64 GT/s -> 6); 0 when the text names no known speed.
int pcie_gen_of_speed(std::string_view speed);

/// The number of entries named node<digits> (the NUMA nodes of /sys/devices/system/node).
int count_numa_nodes(const std::vector<std::string>& names);

/// The CPUs of a sysfs cpulist ("0-3,8,10-11" -> 0 1 2 3 8 10 11); empty when it does not parse.
std::vector<int> parse_cpu_list(std::string_view list);

/// Where the CPU adds of cpu-add-pipelined run (docs/DESIGN.md §3): pinned to the CPUs of the
/// GPU's NUMA node when the machine has more than one node and that node's cpulist is known.
struct HostAddPlacement {
  std::vector<int> cpus;  // empty: not placed (the threads run where the OS puts them)
  std::string text;       // the context's host_add_placement, e.g. "numa node 1 of 2: cpus 16-31"
};
/// The placement for `numa_nodes` nodes, the GPU's node `gpu_node` (-1 unknown) and that node's
/// cpulist line (`cpulist`, "" unknown). Pure.
HostAddPlacement plan_host_add_placement(int numa_nodes, int gpu_node, const std::string& cpulist);
/// plan_host_add_placement from sysfs under `root` for the GPU at `bus_id`.
HostAddPlacement host_add_placement(const std::string& bus_id, const std::string& root = "");

/// Bytes of a sysfs cache `size` line ("307200K" -> 314572800, "32M", "512"); 0 when it does not
/// parse.
uint64_t parse_cache_size(std::string_view s);
/// The last-level cache of cpu0 under `root` (the size of the cache/index* with the highest
/// `level`), in bytes; 0 when sysfs has none.
uint64_t last_level_cache_bytes(const std::string& root = "");
/// Bytes per operand for a host memory bandwidth measurement on `ranks` ranks at once: at least
/// `configured`, and at least 4 * `llc_bytes` / `ranks` rounded up to whole MiB (STREAM's rule,
/// McCalpin: each array at least four times the last-level cache, so that it streams from DRAM).
/// Pure.
uint64_t stream_operand_bytes(uint64_t configured, uint64_t llc_bytes, int ranks);
/// The first line of `path` without its newline, "" when it cannot be read.
std::string read_first_line(const std::string& path);

/// The host's facts under `root` (a sysroot, "" for /): {"thp_enabled", "thp_defrag" (the
/// selected values, "" when absent), "numa_nodes" (0 when unknown), "llc_bytes"
/// (last_level_cache_bytes), "nvidia_driver" (the first line of /proc/driver/nvidia/version, ""
/// when absent)}.
nlohmann::json host_facts(const std::string& root = "");

/// A PCI device's facts under `root`: `bus_id` as CUDA writes it ("0000:1B:00.0", matched
/// lowercase) -> {"numa_node" (-1: none or unknown), "pcie_gen": {"current", "max"}, "pcie_width":
/// {"current", "max"}} (0 where sysfs has no figure).
nlohmann::json pci_facts(const std::string& bus_id, const std::string& root = "");

/// The context's `machine` object (docs/DESIGN.md §6) for the GPUs at `bus_ids` (none on the host
/// backend): {"thp_enabled", "thp_defrag", "numa_nodes", "llc_bytes", "gpu_numa_node": [per
/// device], "pcie_gen": [{"current", "max"} per device], "pcie_width": [the same],
/// "gpu_clocks_mhz": [] (the cuda backend fills it), "driver": {"nvidia": the /proc line or ""}}.
nlohmann::json machine_context(const std::vector<std::string>& bus_ids,
                               const std::string& root = "");

}  // namespace shardaccum::machine
