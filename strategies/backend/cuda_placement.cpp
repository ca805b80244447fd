// Where a cuda rank's CPU adds run (docs/DESIGN.md §3 `cpu-add-pipelined`): on the CPUs of the
// GPU's NUMA node where the machine has more than one node, so that the staging and the saved shard
// are read next to the PCIe root of the GPU that wrote them. The thread and its OpenMP team are
// pinned for the call and given their masks back after (libgomp keeps one team per thread).
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <vector>

#include "strategies/backend/cuda_rank.hpp"
#include "strategies/backend/cuda_world.hpp"
#include "strategies/backend/machine_facts.hpp"

namespace shardaccum::cuda {

void CudaRank::near_device(const std::function<void()>& fn) {
  if (!placement_) {  // once per rank: the sysfs facts do not change during a run
    char bus[32] = {};
    SA_CUDA_CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, device_));
    placement_ = machine::host_add_placement(bus).cpus;
  }
  if (placement_->empty()) {
    fn();
    return;
  }
  cpu_set_t want;
  CPU_ZERO(&want);
  for (int c : *placement_)
    if (c < CPU_SETSIZE) CPU_SET(c, &want);
  const int n = std::max(1, world_.host_threads());  // the team host_add runs with
  std::vector<cpu_set_t> had(n);
#pragma omp parallel num_threads(n)
  {
    const int t = omp_get_thread_num();
    sched_getaffinity(0, sizeof(cpu_set_t), &had[t]);
    sched_setaffinity(0, sizeof(cpu_set_t), &want);  // a refusal leaves the thread where it was
  }
  try {
    fn();
  } catch (...) {
#pragma omp parallel num_threads(n)
    sched_setaffinity(0, sizeof(cpu_set_t), &had[omp_get_thread_num()]);
    throw;
  }
#pragma omp parallel num_threads(n)
  sched_setaffinity(0, sizeof(cpu_set_t), &had[omp_get_thread_num()]);
}

}  // namespace shardaccum::cuda
