// The cuda backend's public API (cuda_backend.hpp): the factory, which validates the options
// against the visible devices, and the helpers bench/ calls before a backend exists.
#include "strategies/backend/cuda_backend.hpp"

#include <stdexcept>
#include <string>

#include "strategies/backend/cuda_world.hpp"

namespace shardaccum {

int cuda_device_count() noexcept {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    // No driver or no device is an answer (0), not an error; any other error left is reported.
    cuda::log_cuda_error(cuda::clear_last_error({e}), "cudaGetLastError", "cuda_device_count");
    return 0;
  }
  return n;
}

uint64_t cuda_device_free_bytes(int device) noexcept {
  int previous = 0;
  size_t free = 0, total = 0;
  cudaError_t e = cudaGetDevice(&previous);
  if (e == cudaSuccess) e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaMemGetInfo(&free, &total);
  if (e != cudaSuccess) {  // unreadable is an answer (0); the error is cleared, others reported
    cuda::log_cuda_error(cuda::clear_last_error({e}), "cudaGetLastError", "cuda_device_free_bytes");
    return 0;
  }
  cuda::log_cuda_error(cudaSetDevice(previous), "cudaSetDevice",
                       "cuda_device_free_bytes: restoring device " + std::to_string(previous));
  return free;
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& opts) {
  const int count = cuda_device_count();
  if (opts.world_size < 1)
    throw std::invalid_argument("--world-size " + std::to_string(opts.world_size) +
                                ": must be at least 1");
  if (opts.process_rank >= opts.world_size)
    throw std::invalid_argument("cuda backend: process rank " + std::to_string(opts.process_rank) +
                                " is not below the world size " + std::to_string(opts.world_size));
  if (opts.process_rank >= 0 && opts.nccl_id.size() != sizeof(ncclUniqueId))
    throw std::invalid_argument("cuda backend: the NCCL unique id from the rendezvous has " +
                                std::to_string(opts.nccl_id.size()) + " bytes, expected " +
                                std::to_string(sizeof(ncclUniqueId)));
  if (opts.process_rank >= 0 && (opts.first_device < 0 || opts.first_device >= count))
    throw std::invalid_argument("--launcher env: rank " + std::to_string(opts.process_rank) +
                                " would use GPU " + std::to_string(opts.first_device) + " but " +
                                std::to_string(count) +
                                " GPU(s) are visible (one process per GPU: launch at most as many "
                                "processes per node as GPUs)");
  if (opts.process_rank < 0 &&
      (opts.first_device < 0 || opts.first_device + opts.world_size > count))
    throw std::invalid_argument(
        "--world-size " + std::to_string(opts.world_size) +
        ": the cuda backend needs one GPU per rank, but " + std::to_string(count) +
        " GPU(s) are visible" +
        (opts.first_device ? " from device " + std::to_string(opts.first_device) : std::string()) +
        " (check CUDA_VISIBLE_DEVICES, or use --backend host)");
  if (!(opts.timeout_s > 0))
    throw std::invalid_argument("cuda backend: timeout_s must be positive");
  return std::make_unique<cuda::CudaWorld>(opts);
}

std::vector<uint8_t> nccl_unique_id() {
  ncclUniqueId id;
  SA_NCCL_CHECK(ncclGetUniqueId(&id));
  const auto* b = reinterpret_cast<const uint8_t*>(&id);
  return std::vector<uint8_t>(b, b + sizeof id);
}

nlohmann::json measure_cuda_ceilings(Backend& backend) {
  auto* world = dynamic_cast<cuda::CudaWorld*>(&backend);
  if (!world)
    throw std::invalid_argument("measure_cuda_ceilings: backend '" + backend.name() +
                                "' is not cuda");
  return world->measure_ceilings();
}

}  // namespace shardaccum
