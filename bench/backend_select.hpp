#pragma once
// Chooses the backend (--backend host|cuda|auto) and keeps one Backend per world size, since a
// cuda world owns its NCCL communicators.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "strategies/backend/backend.hpp"

namespace shardaccum {

struct BackendChoice {
  std::string name;  // "host" or "cuda"
  std::string why;   // e.g. "auto: no GPU visible (CUDA backend not built)"
  int max_world = 1024;
  int default_world = 2;
  std::string default_model = "uniform:8x1M";  // a --model list: default_job(name, default_world)
};

/// The default job of a backend: what a run takes for --model, --warmup and --steps left out.
struct DefaultJob {
  std::string models;  // a --model list
  int warmup = 1;
  int steps = 3;
};

/// The default job on `backend` ("host" or "cuda") with `world_size` ranks (on cuda: the GPUs, one
/// rank each). cuda with one GPU: the single-GPU reference job of issue 13, uniform:16x64M and
/// gpt2-xl with 1 warm-up and 2 measured steps, which fits one device's time budget; cuda with
/// 2+ GPUs: llama2-7b; host: uniform:8x1M (both 1 warm-up + 3 steps). Pure: no GPU is queried.
DefaultJob default_job(const std::string& backend, int world_size);

/// Resolves `requested` (host, cuda, auto). Throws std::runtime_error naming --backend when cuda
/// was asked for and is not built or has no GPU.
BackendChoice choose_backend(const std::string& requested);

/// Host tasks a cuda rank keeps pending (CudaBackendOptions::host_task_depth's default): the model
/// counts their pinned stagings; known before any backend exists.
inline constexpr int kCudaHostTaskDepth = 2;

class BackendPool {
 public:
  /// `pinned_hint`: pinned bytes per rank that the largest case needs (the model's peak), so the
  /// cuda backend pins them once, up front, instead of growing its arena inside a measured step.
  /// `cupti`: "on" (MEMCPY records), "kernels" (and kernel records) or "off".
  BackendPool(BackendChoice choice, int host_threads, std::string cupti, bool ceilings,
              uint64_t pinned_hint);
  /// The backend with `world_size` ranks, created on first use. Only one cuda world lives at a
  /// time (the previous is destroyed first), so GPU memory is not held twice.
  Backend& get(int world_size);
  const BackendChoice& choice() const { return choice_; }
  /// Whether a world was abandoned after losing a peer process (Backend::abandoned): the process
  /// must then end with std::_Exit, never tearing that world down.
  bool abandoned() const {
    for (const auto& [w, b] : worlds_)
      if (b && b->abandoned()) return true;
    return false;
  }
  /// The cuda backend's dense GEMM ceiling in these gradient dtypes (--backward gemm cases), fp32
  /// with TF32 when `tf32`, and the GEMM backward alone of each of `layouts`; none by default.
  void set_gemm_ceilings(std::vector<DType> dtypes, bool tf32,
                         std::vector<GemmCeilingCase> layouts = {}) {
    gemm_dtypes_ = std::move(dtypes);
    gemm_tf32_ = tf32;
    gemm_layouts_ = std::move(layouts);
  }
  /// The cuda backend's synthetic backward alone of each of `layouts` (the generator's rate at
  /// their own unit sizes, bound.hpp at_own_shapes); none by default.
  void set_generate_ceilings(std::vector<GenerateCeilingCase> layouts) {
    generate_layouts_ = std::move(layouts);
  }
  /// Waits (collectives, peers) of the cuda backend end with an error after this many seconds.
  void set_timeout(double seconds) { timeout_s_ = seconds; }
  /// One process per GPU (--launcher env): this process is global rank `rank`, on visible device
  /// `device`, joining the world through `nccl_id` (rank 0's, from the rendezvous).
  void set_process(int rank, int device, std::vector<uint8_t> nccl_id) {
    process_rank_ = rank;
    process_device_ = device;
    nccl_id_ = std::move(nccl_id);
  }

 private:
  BackendChoice choice_;
  int host_threads_;
  std::string cupti_;
  bool ceilings_;
  uint64_t pinned_hint_;
  double timeout_s_ = 300;
  std::vector<DType> gemm_dtypes_;
  bool gemm_tf32_ = false;
  std::vector<GemmCeilingCase> gemm_layouts_;
  std::vector<GenerateCeilingCase> generate_layouts_;
  int process_rank_ = -1, process_device_ = 0;
  std::vector<uint8_t> nccl_id_;
  std::map<int, std::unique_ptr<Backend>> worlds_;
};

}  // namespace shardaccum
