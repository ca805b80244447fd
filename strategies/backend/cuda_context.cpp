// What a cuda world records in the JSON context: devices, versions, options (once, at start), and
// the figures that change (CUPTI state, pinned arena growth, the last ceilings).
#include "strategies/backend/cuda_world.hpp"

#include <omp.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "strategies/backend/machine_facts.hpp"

namespace shardaccum::cuda {

namespace {
std::string version_string(int v) {  // CUDA: 1000*major + 10*minor
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}
}  // namespace

void CudaWorld::build_static_context() {
  int driver = 0, runtime = 0, nccl = 0, count = 0;
  SA_CUDA_CHECK(cudaDriverGetVersion(&driver));
  SA_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  SA_CUDA_CHECK(cudaGetDeviceCount(&count));
  SA_NCCL_CHECK(ncclGetVersion(&nccl));
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  nlohmann::json devices = nlohmann::json::array();
  std::vector<std::string> bus_ids;
  nlohmann::json clocks = nlohmann::json::array();
  nlohmann::json placement = nlohmann::json::array();  // per device: where cpu-add-pipelined adds
  for (int i = 0; i < local_count(); ++i) {
    cudaDeviceProp p{};
    SA_CUDA_CHECK(cudaGetDeviceProperties(&p, opts_.first_device + i));
    char bus[32] = {};
    SA_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, opts_.first_device + i));
    bus_ids.emplace_back(bus);
    placement.push_back(machine::host_add_placement(bus).text);
    // Peak clocks from CUDA (kHz); the current ones need NVML, which this build does not link.
    int sm_khz = 0, mem_khz = 0;
    SA_CUDA_CHECK(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, opts_.first_device + i));
    SA_CUDA_CHECK(
        cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, opts_.first_device + i));
    clocks.push_back({{"sm", {{"current", nullptr}, {"max", sm_khz / 1000}}},
                      {"mem", {{"current", nullptr}, {"max", mem_khz / 1000}}},
                      {"current", "not read: needs NVML, not linked"}});
    devices.push_back(
        {{"rank", rank_base() + i},
         {"host", host},
         {"device", opts_.first_device + i},
         {"name", p.name},
         {"pci_bus_id", bus},
         {"total_memory_bytes", p.totalGlobalMem},
         {"sm_count", p.multiProcessorCount},
         {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)}});
  }
  if (multi_process()) {  // every process's devices, so that rank 0's context lists them all
    std::vector<std::vector<uint8_t>> all(opts_.world_size);
    const std::string mine = devices.dump();
    all[rank_base()].assign(mine.begin(), mine.end());
    allgather(all);
    devices = nlohmann::json::array();
    for (const auto& b : all)
      for (const auto& d : nlohmann::json::parse(b.begin(), b.end())) devices.push_back(d);
  }
  // What explains a copy or host-add figure (docs/DESIGN.md §6): this process's host and GPUs.
  nlohmann::json machine = machine::machine_context(bus_ids);
  machine["gpu_clocks_mhz"] = clocks;
  machine["driver"]["cuda"] = version_string(driver);
  const char* method =
      opts_.world_size == 1
          ? "CUDA events around each reduce-scatter on the comm stream, which a one-thread gate "
            "kernel holds until the host has returned from ncclReduceScatter (start: the GPU "
            "reaches the collective, not the host's launch); at world 1 NCCL's reduce-scatter is "
            "a device-to-device copy, not a kernel; nccl_wait_ms 0"
          : "CUDA events around each reduce-scatter on the comm stream, which a one-thread gate "
            "kernel holds until the host has returned from ncclReduceScatter (start: the GPU "
            "reaches the collective, not the host's launch); %globaltimer stamps at the gate's "
            "release and after the collective give nccl_wait_ms (latest rank's start - own "
            "start, over the ranks of one process; 0 across processes) and nccl_link_ms";
  const char* op_method =
      op_holds_on(opts_.first_device)
          ? "CUDA events around each op on its stream, the stream held (cuStreamWaitValue64) until "
            "the host has issued the op: the brackets are the GPU's time, not the host's issue "
            "delay; cuBLAS GEMMs are not held; CUDA_MODULE_LOADING=EAGER unless set, so that no "
            "first "
            "launch synchronises the context inside a hold, and a watchdog releases any hold "
            "older than 1 s with a warning (SHARDACCUM_HOLD_OPS=0 turns the holds off)"
          : "CUDA events around each op on its stream, not held: where the host issues slower than "
            "the GPU runs, a bracket includes the host's issue delay (SHARDACCUM_HOLD_OPS=1 holds "
            "each stream until its op is issued)";
  static_context_ = {
      {"backend", "cuda"},
      {"time_domain", "CUDA events on each rank's streams"},
      {"world_size", opts_.world_size},
      {"launch", multi_process()
                     ? "one process per GPU (--launcher env); this context is rank 0's, "
                       "its pinned arena figures are rank 0's own"
                     : "one process, a thread per rank (--launcher threads)"},
      {"device_count", count},
      {"devices", devices},
      {"driver_version", version_string(driver)},
      {"runtime_version", version_string(runtime)},
      {"nccl_version", std::to_string(nccl / 10000) + "." + std::to_string(nccl / 100 % 100) + "." +
                           std::to_string(nccl % 100)},
      {"nccl_header_version", std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                                  std::to_string(NCCL_PATCH)},
      {"device_memory", "cudaMallocAsync pool per rank; peak = cudaMemPoolAttrUsedMemHigh"},
      {"pinned_pool_bytes", opts_.pinned_pool_bytes},
      {"host_add_threads", host_threads_},
      {"host_task_depth", opts_.host_task_depth},
      // The NUMA nodes and where cpu-add-pipelined's CPU adds run, per local device.
      {"host_add_placement", placement},
      {"omp_max_threads", omp_get_max_threads()},
      {"hardware_threads", std::thread::hardware_concurrency()},
      {"timeout_s", opts_.timeout_s},
      {"machine_facts", machine},
      {"nccl_time_method", method},
      {"op_time_method", op_method}};
}

nlohmann::json CudaWorld::context() const {
  nlohmann::json j = static_context_;
  j["bytes_source"] = collector_ ? "cupti" : "backend accounting";
  j["cupti_kernels"] = collector_ && opts_.cupti_kernels ? "on" : "off";
  j["cupti"] = collector_ ? "on"
                          : (opts_.cupti ? "off (another CUPTI subscriber, e.g. Nsight Systems)"
                                         : "off (--cupti off)");
  nlohmann::json growths = nlohmann::json::array(), capacity = nlohmann::json::array();
  for (const auto& r : ranks_) {
    growths.push_back(r->pinned_growths());
    capacity.push_back(r->pinned_capacity());
  }
  j["pinned_arena_growths"] = growths;
  j["pinned_arena_bytes"] = capacity;
  std::lock_guard<std::mutex> l(ceilings_mutex_);
  j.update(ceilings_);
  return j;
}

}  // namespace shardaccum::cuda
