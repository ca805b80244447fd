#pragma once
// The cuda backend (docs/DESIGN.md §4): one thread and one GPU per rank in this process, one NCCL
// communicator per rank (as nccl-tests `-t`), a compute, a communication and a copy stream per
// rank, device memory from a CUDA memory pool, pinned host memory from an arena pinned once.
//
// A plain C++ header: no CUDA or NCCL header is needed to include it.
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/ceilings.hpp"
#include "strategies/backend/backend.hpp"

namespace shardaccum {

struct CudaBackendOptions {
  int world_size = 1;    // ranks = GPUs, devices first_device .. first_device + world_size - 1
  int first_device = 0;  // of the visible devices (CUDA_VISIBLE_DEVICES applies)
  /// Pinned host memory per rank, pinned once at construction (pinning tens of GB takes seconds).
  /// The arena grows by further chunks when a step needs more; context() counts the growths.
  uint64_t pinned_pool_bytes = 1ull << 30;
  /// OpenMP threads of one rank's CPU add and pinned scale; 0: omp_get_max_threads()/world_size.
  int host_add_threads = 0;
  /// Host tasks (the CPU adds, pinned finalize) that may be pending behind a rank's thread, run
  /// in order by one worker thread per rank; 0 runs each at once on the rank's thread.
  int host_task_depth = 2;
  /// Measure the ceilings (docs/DESIGN.md §6) at construction; measure_cuda_ceilings() does it
  /// later.
  bool measure_ceilings = true;
  uint64_t ceiling_copy_bytes = 256ull << 20;          // per rank and direction
  uint64_t ceiling_device_copy_bytes = 512ull << 20;   // per rank
  uint64_t ceiling_reduce_scatter_bytes = 1ull << 30;  // input bytes per rank (fp32)
  uint64_t ceiling_host_add_bytes = 256ull << 20;      // per operand and rank
  /// The dense GEMM ceiling (n x n x n, cuBLAS) in each of these gradient dtypes: those of the
  /// run's --backward gemm cases; none when empty. fp32 with TF32 when `ceiling_gemm_tf32`.
  std::vector<DType> ceiling_gemm_dtypes;
  bool ceiling_gemm_tf32 = false;
  uint64_t ceiling_gemm_n = 8192;  // halved until three n x n matrices fit in a quarter of free
  /// The GEMM backward alone of each of these layouts (Ceilings::gemm_backward), fp32 with TF32
  /// when `ceiling_gemm_tf32`: the compute ceiling of their cases (bound.hpp at_own_shapes).
  std::vector<GemmCeilingCase> ceiling_gemm_layouts;
  /// The synthetic backward alone (the generator over every unit) of each of these layouts
  /// (Ceilings::generate_layouts): the compute ceiling of their synthetic cases (at_own_shapes).
  std::vector<GenerateCeilingCase> ceiling_generate_layouts;
  /// A wait (event, stream, collective, barrier) longer than this ends with a clear error and the
  /// communicators are aborted, never a hang.
  double timeout_s = 300;
  /// The in-process CUPTI collector (--cupti): bytes and kernel times from CUPTI's activity
  /// records of the measured steps. Off by itself under Nsight Systems (one CUPTI subscriber).
  bool cupti = true;
  /// Also CUPTI's kernel records (NCCL / accumulate / generate kernel times): costly, see
  /// CuptiCollector::start_if_allowed.
  bool cupti_kernels = false;
  /// One process per GPU (--launcher env): this process runs only global rank `process_rank` of
  /// world_size, on device first_device, and joins the others through `nccl_id` (nccl_unique_id()
  /// of rank 0, delivered by the rendezvous). -1: every rank is a thread of this process.
  int process_rank = -1;
  std::vector<uint8_t> nccl_id;
};

/// A fresh NCCL unique id (ncclGetUniqueId: opens NCCL's bootstrap listener on this host), as
/// bytes for the rendezvous. Throws std::runtime_error naming the call.
std::vector<uint8_t> nccl_unique_id();

/// Throws std::invalid_argument naming --world-size when world_size < 1 or exceeds the visible
/// GPUs (after first_device; one GPU under a multi-process launch), or for a process_rank out of
/// range or an nccl_id of the wrong size; std::runtime_error with the failing call when CUDA/NCCL
/// fail (under a multi-process launch, also when a peer never arrives within timeout_s).
std::unique_ptr<Backend> make_cuda_backend(const CudaBackendOptions& opts);

/// Visible CUDA devices; 0 when there is no driver or device (never throws).
int cuda_device_count() noexcept;

/// Free memory of visible device `device` (cudaMemGetInfo, after its primary context starts, which
/// every rank on it shares), in bytes; 0 when it cannot be read (never throws).
uint64_t cuda_device_free_bytes(int device) noexcept;

/// Measures the ceilings again on every rank at once and returns them (also put in context()).
/// Keys: ceiling_h2d_gbps, ceiling_d2h_gbps, ceiling_bidir_gbps (both directions at once, the two
/// summed), ceiling_device_copy_gbps (read + write), ceiling_host_add_gbps (12 B per fp32 element),
/// ceiling_reduce_scatter_busbw_gbps (nccl-tests); all per rank, averaged over ranks, in GB/s
/// (1e9 B/s); ceiling_generate_gelems (the generator kernel, 1e9 elements/s); ceiling_sm_overlap
/// (the generator and the add kernel at once: their times alone over their time together, 1 to
/// 2). Each is the best of three timed means. `backend` must come from make_cuda_backend (else
/// std::invalid_argument).
nlohmann::json measure_cuda_ceilings(Backend& backend);

}  // namespace shardaccum
