// The machine facts of the JSON context (strategies/backend/machine_facts): sysfs strings parsed
// as the kernel writes them, and a fake sysroot read end to end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "strategies/backend/machine_facts.hpp"

namespace shardaccum::machine {
namespace {

TEST(MachineFacts, SelectedChoiceIsTheBracketedValue) {
  EXPECT_EQ(selected_choice("always [madvise] never"), "madvise");
  EXPECT_EQ(selected_choice("[always] madvise never\n"), "always");
  EXPECT_EQ(selected_choice("always defer defer+madvise [madvise] never"), "madvise");
  EXPECT_EQ(selected_choice("  never \n"), "never");
  EXPECT_EQ(selected_choice(""), "");
}

TEST(MachineFacts, PcieGenerationFromTheLinkSpeed) {
  EXPECT_EQ(pcie_gen_of_speed("2.5 GT/s PCIe"), 1);
  EXPECT_EQ(pcie_gen_of_speed("8.0 GT/s PCIe\n"), 3);
  EXPECT_EQ(pcie_gen_of_speed("16.0 GT/s PCIe"), 4);
  EXPECT_EQ(pcie_gen_of_speed("32.0 GT/s PCIe"), 5);
  EXPECT_EQ(pcie_gen_of_speed("Unknown"), 0);
  EXPECT_EQ(pcie_gen_of_speed("12.0 GT/s"), 0);
  EXPECT_EQ(pcie_gen_of_speed(""), 0);
}

TEST(MachineFacts, CacheSizesAsSysfsWritesThem) {
  EXPECT_EQ(parse_cache_size("307200K"), uint64_t{307200} << 10);
  EXPECT_EQ(parse_cache_size("32M\n"), uint64_t{32} << 20);
  EXPECT_EQ(parse_cache_size("1G"), uint64_t{1} << 30);
  EXPECT_EQ(parse_cache_size("512"), 512u);
  EXPECT_EQ(parse_cache_size(""), 0u);
  EXPECT_EQ(parse_cache_size("K"), 0u);
  EXPECT_EQ(parse_cache_size("12KB"), 0u);
}

// The host add ceiling's operands (STREAM's rule): one H200 VM's L3 of 300 MiB asks 1200 MiB of
// each at one rank, 150 MiB at eight (so the configured 256 MiB stands), nothing without an L3.
TEST(MachineFacts, StreamOperandsAreFourLastLevelCachesOverTheRanks) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  EXPECT_EQ(stream_operand_bytes(256 * kMiB, 300 * kMiB, 1), 1200 * kMiB);
  EXPECT_EQ(stream_operand_bytes(256 * kMiB, 300 * kMiB, 2), 600 * kMiB);
  EXPECT_EQ(stream_operand_bytes(256 * kMiB, 300 * kMiB, 8), 256 * kMiB);
  EXPECT_EQ(stream_operand_bytes(256 * kMiB, 0, 1), 256 * kMiB);
  EXPECT_EQ(stream_operand_bytes(0, 300 * kMiB + 1, 3), 401 * kMiB);        // rounded up to a MiB
  EXPECT_EQ(stream_operand_bytes(256 * kMiB, 300 * kMiB, 0), 1200 * kMiB);  // no ranks: one
}

TEST(MachineFacts, NumaNodesAreTheNodeDirectories) {
  EXPECT_EQ(count_numa_nodes({"node0", "node1", "possible", "online", "has_cpu", "power"}), 2);
  EXPECT_EQ(count_numa_nodes({"node", "nodeX", "node12"}), 1);
  EXPECT_EQ(count_numa_nodes({}), 0);
}

TEST(MachineFacts, AFakeSysrootIsReadEndToEnd) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("sa_machine_" + std::to_string(getpid()));
  const auto put = [&](const std::string& rel, const std::string& text) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  };
  put("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
  put("sys/kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never\n");
  fs::create_directories(root / "sys/devices/system/node/node0");
  fs::create_directories(root / "sys/devices/system/node/node1");
  put("sys/devices/system/node/online", "0-1\n");
  // cpu0's caches: L1d, L2 and an L3 of 300 MiB (one H200 VM's), and an index without a size.
  const std::string cache = "sys/devices/system/cpu/cpu0/cache/";
  put(cache + "index0/level", "1\n");
  put(cache + "index0/size", "48K\n");
  put(cache + "index2/level", "2\n");
  put(cache + "index2/size", "2048K\n");
  put(cache + "index3/level", "3\n");
  put(cache + "index3/size", "307200K\n");
  put(cache + "index4/level", "4\n");
  put("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.1\nGCC\n");
  const std::string dev = "sys/bus/pci/devices/0000:1b:00.0/";
  put(dev + "numa_node", "1\n");
  put(dev + "current_link_speed", "16.0 GT/s PCIe\n");
  put(dev + "max_link_speed", "32.0 GT/s PCIe\n");
  put(dev + "current_link_width", "8\n");
  put(dev + "max_link_width", "16\n");

  const nlohmann::json h = host_facts(root.string());
  EXPECT_EQ(h.at("thp_enabled"), "madvise");
  EXPECT_EQ(h.at("thp_defrag"), "madvise");
  EXPECT_EQ(h.at("numa_nodes"), 2);
  EXPECT_EQ(h.at("llc_bytes"), uint64_t{307200} * 1024);
  EXPECT_EQ(h.at("nvidia_driver"), "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.1");
  const nlohmann::json p = pci_facts("0000:1B:00.0", root.string());  // as CUDA spells it
  EXPECT_EQ(p.at("numa_node"), 1);
  EXPECT_EQ(p.at("pcie_gen"), (nlohmann::json{{"current", 4}, {"max", 5}}));
  EXPECT_EQ(p.at("pcie_width"), (nlohmann::json{{"current", 8}, {"max", 16}}));
  // A device sysfs does not know: unknown figures, no throw.
  const nlohmann::json none = pci_facts("0000:ff:00.0", root.string());
  EXPECT_EQ(none.at("numa_node"), -1);
  EXPECT_EQ(none.at("pcie_gen").at("max"), 0);
  const nlohmann::json m = machine_context({"0000:1B:00.0", "0000:ff:00.0"}, root.string());
  EXPECT_EQ(m.at("thp_enabled"), "madvise");
  EXPECT_EQ(m.at("numa_nodes"), 2);
  EXPECT_EQ(m.at("llc_bytes"), h.at("llc_bytes"));
  EXPECT_EQ(m.at("gpu_numa_node"), (nlohmann::json{1, -1}));
  EXPECT_EQ(m.at("pcie_width").at(0).at("max"), 16);
  EXPECT_EQ(m.at("driver").at("nvidia"), h.at("nvidia_driver"));
  fs::remove_all(root);
}

// cpu-add-pipelined's placement (docs/DESIGN.md §3): pinned to the GPU's node only when there are
// several nodes and that node's cpulist parses.
TEST(MachineFacts, HostAddPlacementPinsToTheGpusNodeOnlyWithSeveralNodes) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_TRUE(parse_cpu_list("3-1").empty());
  EXPECT_TRUE(parse_cpu_list("0-x").empty());
  EXPECT_TRUE(parse_cpu_list("").empty());
  const HostAddPlacement two = plan_host_add_placement(2, 1, "16-19");
  EXPECT_EQ(two.cpus, (std::vector<int>{16, 17, 18, 19}));
  EXPECT_EQ(two.text, "numa node 1 of 2: cpus 16-19");
  const HostAddPlacement one = plan_host_add_placement(1, 0, "0-15");
  EXPECT_TRUE(one.cpus.empty());
  EXPECT_EQ(one.text, "not placed: 1 NUMA node(s)");
  EXPECT_TRUE(plan_host_add_placement(2, -1, "").cpus.empty());
  EXPECT_NE(plan_host_add_placement(2, -1, "").text.find("unknown"), std::string::npos);
}

}  // namespace
}  // namespace shardaccum::machine
