#include "bench/backend_select.hpp"

#include <sched.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include "strategies/backend/host_backend.hpp"
#if defined(SHARDACCUM_HAVE_CUDA)
#include "strategies/backend/cuda_backend.hpp"
#endif

namespace shardaccum {

DefaultJob default_job(const std::string& backend, int world_size) {
  if (backend != "cuda") return {"uniform:8x1M"};
  if (world_size == 1) return {"uniform:16x64M,gpt2-xl", 1, 2};
  return {"llama2-7b"};
}

BackendChoice choose_backend(const std::string& requested) {
  int gpus = 0;
#if defined(SHARDACCUM_HAVE_CUDA)
  gpus = cuda_device_count();
  const char* built = "";
#else
  // The host preset, or a default preset configured where no nvcc was found.
  const char* built =
      " (this build has no CUDA backend: the host preset, or no nvcc at configure time)";
#endif
  BackendChoice c;
  if (requested == "cuda" && gpus == 0)
    throw std::runtime_error(std::string("--backend cuda: no GPU is visible") + built +
                             "; use --backend host or auto");
  if (requested == "cuda" || (requested == "auto" && gpus > 0)) {
    c.name = "cuda";
    c.why = requested == "auto" ? "auto: " + std::to_string(gpus) + " GPU(s) visible" : "requested";
    c.max_world = gpus;
    c.default_world = gpus;
    c.default_model = default_job(c.name, gpus).models;
    return c;
  }
  c.name = "host";
  c.why = requested == "auto" ? std::string("auto: no GPU visible") + built : "requested";
  return c;
}

BackendPool::BackendPool(BackendChoice choice, int host_threads, std::string cupti, bool ceilings,
                         uint64_t pinned_hint)
    : choice_(std::move(choice)),
      host_threads_(host_threads),
      cupti_(std::move(cupti)),
      ceilings_(ceilings),
      pinned_hint_(pinned_hint) {}

Backend& BackendPool::get(int world_size) {
  auto it = worlds_.find(world_size);
  if (it != worlds_.end()) return *it->second;
  if (choice_.name == "cuda") {
#if defined(SHARDACCUM_HAVE_CUDA)
    worlds_.clear();
    CudaBackendOptions o;
    o.host_task_depth = kCudaHostTaskDepth;
    o.world_size = world_size;
    o.host_add_threads = host_threads_;
    o.cupti = cupti_ != "off";
    o.cupti_kernels = cupti_ == "kernels";
    o.measure_ceilings = ceilings_;
    o.ceiling_gemm_dtypes = gemm_dtypes_;
    o.ceiling_gemm_tf32 = gemm_tf32_;
    o.ceiling_gemm_layouts = gemm_layouts_;
    o.ceiling_generate_layouts = generate_layouts_;
    o.pinned_pool_bytes = std::max<uint64_t>(o.pinned_pool_bytes, pinned_hint_ + pinned_hint_ / 16);
    o.timeout_s = timeout_s_;
    if (process_rank_ >= 0) {
      o.process_rank = process_rank_;
      o.first_device = process_device_;
      o.nccl_id = nccl_id_;  // a copy: a later world of this size would need a new rendezvous
      // The cores this process may use (its affinity: srun binds tasks) are shared with the other
      // processes of the node, taken as one per visible GPU.
      if (o.host_add_threads == 0) {
        cpu_set_t set;
        const int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
        const int peers = std::max(1, std::min(world_size, cuda_device_count()));
        o.host_add_threads = std::max(1, cores / peers);
      }
    }
    return *(worlds_[world_size] = make_cuda_backend(o));
#endif
  }
  HostBackendOptions o;
  o.world_size = world_size;
  const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  o.add_threads = host_threads_ > 0 ? host_threads_ : std::max(1, hw / world_size);
  return *(worlds_[world_size] = make_host_backend(o));
}

}  // namespace shardaccum
