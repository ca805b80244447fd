#pragma once
// The ceilings a backend measured at start (docs/DESIGN.md §6), typed: what a phase's bytes per
// second are compared with. 0 where a backend measured nothing (the host backend, --ceilings off).
namespace shardaccum {

/// GB/s (1e9 bytes per second), per rank, the mean over ranks.
struct Ceilings {
  double h2d_gbps = 0;                   // pinned host -> device, one copy engine
  double d2h_gbps = 0;                   // device -> pinned host
  double bidir_gbps = 0;                 // H2D and D2H at once, their sum
  double device_copy_gbps = 0;           // device memory: bytes read + written per second
  double reduce_scatter_busbw_gbps = 0;  // NCCL reduce-scatter bus bandwidth (nccl-tests' busbw)
  double reduce_scatter_algbw_gbps = 0;  // and its algorithm bandwidth
  double host_add_gbps = 0;              // the CPU add's bytes read + written per second
  // Dense GEMM (cuBLAS, square), 1e12 FLOP/s, in the gradient dtypes of --backward gemm cases.
  double gemm_tflops_bf16 = 0;
  double gemm_tflops_fp32 = 0;  // TF32 tensor cores when the run has --tf32
  // The synthetic backward's generator kernel alone (dyadic values, fp32, writing): 1e9 elements
  // per second. It computes a hash per element, so it runs below the device copy ceiling.
  double generate_gelems = 0;
  bool measured() const { return h2d_gbps > 0 || device_copy_gbps > 0 || host_add_gbps > 0; }
};

}  // namespace shardaccum
