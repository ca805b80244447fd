#pragma once
// How the cuda backend launches a device add, `dst += src` in fp32
// (RankBackend::set_device_add_grid): on a grid that leaves SMs to the other streams, or on every
// SM as PyTorch launches its elementwise kernels, so that a preset of a PyTorch system holds the
// GPU as that system's adds do.
#include <stdexcept>
#include <string>
#include <string_view>

namespace shardaccum {

/// `two_per_sm`: the suite's idealised add, at most 2 blocks of 256 threads per SM (grid-stride):
/// 97% of the add's rate alone, and it leaves SMs to a kernel or a copy on another stream beside it
/// (one H200: a 1 GiB fp32 += beside the generator overlapped 1.57x, reports/h200-experiments-1204
/// "Memory-bound kernels beside the generator").
/// `torch`: every SM until the add's last wave, as PyTorch launches `grad += new_grad`
/// (ATen/native/cuda/CUDALoops.cuh launch_vectorized_kernel: one block of num_threads() = 128
/// threads per block_work_size() elements, grid = ceil(N / block_work_size())). The suite stands
/// for it with its full grid, up to 8192 blocks of 256 threads (grid-stride), which takes every SM
/// as PyTorch's does: on the higher-priority stream it stalls the other stream's work (overlap
/// 1.05x in the same measurement). Measured in real FSDP2 (one H200, uniform:16x64M, SnSS without
/// offload, reports/h200-diagnosis-1204/call3/copy_out.py): on the reduce-scatter stream, the
/// device's greatest priority, the `+=` of a sync after a sync (191 us alone) holds the compute
/// stream's all-gather copy-out beside it from 252 to 436 us, so the next unit's backward waits.
enum class DeviceAddGrid { two_per_sm, torch };

/// "two-per-sm" or "torch", as --device-add-grid and the case name spell them.
inline const char* device_add_grid_name(DeviceAddGrid g) {
  return g == DeviceAddGrid::torch ? "torch" : "two-per-sm";
}

/// Parses device_add_grid_name's spellings. Throws std::invalid_argument naming --device-add-grid.
inline DeviceAddGrid parse_device_add_grid(std::string_view s) {
  if (s == "torch") return DeviceAddGrid::torch;
  if (s == "two-per-sm") return DeviceAddGrid::two_per_sm;
  throw std::invalid_argument("--device-add-grid: unknown value '" + std::string(s) +
                              "' (expected auto, torch or two-per-sm)");
}

}  // namespace shardaccum
