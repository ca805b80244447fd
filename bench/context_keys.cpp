#include "bench/context_keys.hpp"

#include <set>

namespace shardaccum {

bool reserved_context_key(const std::string& key) {
  static const std::set<std::string> keys = {
      // Google Benchmark's own (JSONReporter::ReportContext).
      "date", "host_name", "executable", "num_cpus", "mhz_per_cpu", "cpu_scaling_enabled", "caches",
      "load_avg", "library_version", "library_build_type", "json_schema_version",
      // The suite's (run_context.cpp add_suite_context).
      "run_id", "registry", "backend", "backend_choice", "time_domain", "git_commit", "command",
      "launcher", "processes", "rendezvous", "warmup_steps", "measured_steps", "check",
      "left_out_cases", "model", "world_size", "k", "gen", "seed", "backward", "tokens", "tf32",
      "chunk_bytes", "host_threads", "param_traffic", "grad_accumulation", "device_add_grid",
      "comm_priority", "hook_host_us", "part", "matrix_cases",
      // The backends' (run_context.cpp add_backend_context, host_backend.cpp and
      // cuda_context.cpp context(), cuda_ceilings.cpp).
      "machine", "bytes_source", "machine_facts", "nccl_time_method", "op_time_method",
      "add_threads", "hardware_threads", "host", "launch", "device_count", "devices",
      "driver_version", "runtime_version", "nccl_version", "nccl_header_version", "device_memory",
      "pinned_pool_bytes", "host_add_threads", "host_task_depth", "host_add_placement",
      "omp_max_threads", "timeout_s", "cupti", "cupti_kernels", "pinned_arena_growths",
      "pinned_arena_bytes", "host_add_during_d2h_gbps", "accumulate_kernel_gbps",
      "accumulate_kernel_frac_device_copy", "generate_gelems", "sm_overlap", "gemm_tflops_bf16",
      "gemm_tflops_fp32"};
  return keys.contains(key) || key.rfind("ceiling_", 0) == 0 || key.rfind("backend_", 0) == 0;
}

}  // namespace shardaccum
