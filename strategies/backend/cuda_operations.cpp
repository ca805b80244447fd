// The operations of a cuda rank: copy, add, convert, scale, generate, reduce_scatter, each issued
// on its stream after the hazards of its operands (cuda_hazards.cpp).
#include "strategies/backend/cuda_rank.hpp"

#include <optional>

#include "common/errors.hpp"
#include "profiling/nvtx.hpp"
#include "strategies/backend/cuda_util.hpp"
#include "strategies/backend/cuda_world.hpp"

namespace shardaccum::cuda {

namespace {
ncclDataType_t nccl_type(DType t) { return t == DType::fp32 ? ncclFloat32 : ncclBfloat16; }
}  // namespace

void CudaRank::copy(Buffer& dst, const Buffer& src, Stream s) { copy_counted(dst, src, s, false); }

void CudaRank::copy_param(Buffer& dst, const Buffer& src, Stream s) {
  if (is_host(dst.space()))
    throw BackendError(who("copy_param") + " of " + shape(src) + " into " + shape(dst) +
                       ": the parameters' copy lands on the device");
  copy_counted(dst, src, s, true);
}

void CudaRank::copy_counted(Buffer& dst, const Buffer& src, Stream s, bool param) {
  set_device(device_);
  Lock l(mu_);
  // No host task (a CPU add of gradient shards) ever reads the parameters: their copy need not
  // wait for the queued tasks as copies of older pinned buffers do.
  if (!param) after_tasks(l, {&dst, &src}, "copy");
  live(dst, "copy", "destination");
  live(src, "copy", "source");
  if (dst.dtype() != src.dtype() || dst.numel() != src.numel())
    throw BackendError(who("copy") + " between " + shape(src) + " and " + shape(dst) +
                       ": copies move bytes, dtype and numel must match");
  if (is_host(dst.space()) && is_host(src.space()))
    throw BackendError(who("copy") + ": host-to-host copy is not a transfer of this suite");
  const bool h2d = is_host(src.space());
  const bool d2h = is_host(dst.space());
  // A device copy of the parameters (FSDP2's all-gather copy-out) is the compute stream's work of
  // the unit's forward or backward; the gradient path's device copies are the accumulate phase's.
  const Phase phase = h2d   ? Phase::h2d
                      : d2h ? Phase::d2h
                            : (param ? Phase::backward : Phase::accumulate);
  const int si = idx(s);
  // An NVTX range around the issue: Nsight's GPU projection gives the copy to the h2d/d2h phase,
  // and the copy-out, issued before the unit's backward range opens, to the backward phase.
  std::optional<nvtx::PhaseRange> range;
  if (h2d || d2h || param) range.emplace(phase, src.bytes(), rank_);
  cudaEvent_t start = begin_gpu_op(si, {{&src, false}, {&dst, true}});
  SA_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), src.bytes(), cudaMemcpyDefault, stream(s)));
  end_gpu_op(si, phase, start, {{&src, false}, {&dst, true}}, true);
  if (h2d) (param ? m_.param_h2d_bytes : m_.h2d_bytes) += src.bytes();
  if (!h2d && !d2h && param) m_.param_d2d_bytes += src.bytes();
  if (d2h) m_.d2h_bytes += src.bytes();
  if (d2h && dst.space() == MemSpace::pageable_host) m_.d2h_pageable_bytes += src.bytes();
}

void CudaRank::add(Buffer& dst, const Buffer& src, MemSpace space, Stream s) {
  set_device(device_);
  Lock l(mu_);
  if (space == MemSpace::pinned_host) after_tasks(l, {&dst, &src}, "add");
  // The CPU add's operands may be in either host space (add_operand_in).
  in_space(dst, is_host(space) && is_host(dst.space()) ? dst.space() : space, "add", "accumulator");
  in_space(src, is_host(space) && is_host(src.space()) ? src.space() : space, "add", "addend");
  if (dst.numel() != src.numel())
    throw BackendError(who("add") + " of " + shape(src) + " into " + shape(dst) +
                       ": numel differs");
  if (space == MemSpace::device) {
    const int si = idx(s);
    cudaEvent_t start = begin_gpu_op(si, {{&src, false}, {&dst, true}});
    launch_add(dst.data(), dst.dtype(), src.data(), src.dtype(), dst.numel(), false, stream(s),
               next_kernel_stamp(), add_grid_);
    end_gpu_op(si, Phase::accumulate, start, {{&src, false}, {&dst, true}});
    if (in_step_) m_.accumulate_bytes += src.bytes() + 2 * dst.bytes();
    return;
  }
  // The CPU add (pinned memory): after the GPU's pending accesses to either operand.
  if (in_step_) m_.cpu_add_bytes += src.bytes() + 2 * dst.bytes();
  host_op(l, Phase::cpu_add, {{&src, false}, {&dst, true}}, "cpu add", [&] {
    // NVTX only: host_op draws the CPU add on the trace's "host" track.
    nvtx::PhaseRange range(Phase::cpu_add, src.bytes() + 2 * dst.bytes(), rank_, false);
    host_add(dst.data(), dst.dtype(), src.data(), src.dtype(), dst.numel(),
             add_threads_ > 0 ? add_threads_ : world_.host_threads(), add_split_);
  });
}

void CudaRank::convert(Buffer& dst, const Buffer& src, Stream s) {
  set_device(device_);
  Lock l(mu_);
  in_space(dst, MemSpace::device, "convert", "destination");
  in_space(src, MemSpace::device, "convert", "source");
  if (dst.numel() != src.numel())
    throw BackendError(who("convert") + " of " + shape(src) + " into " + shape(dst) +
                       ": numel differs");
  const int si = idx(s);
  cudaEvent_t start = begin_gpu_op(si, {{&src, false}, {&dst, true}});
  launch_add(dst.data(), dst.dtype(), src.data(), src.dtype(), dst.numel(), true, stream(s),
             next_kernel_stamp());
  end_gpu_op(si, Phase::accumulate, start, {{&src, false}, {&dst, true}});
  if (in_step_) m_.accumulate_bytes += src.bytes() + dst.bytes();
}

void CudaRank::scale(Buffer& dst, double factor, Stream s) {
  set_device(device_);
  Lock l(mu_);
  after_tasks(l, {&dst}, "scale");
  live(dst, "scale", "operand");
  const float f = static_cast<float>(factor);  // as the host backend: one fp32 multiply
  if (dst.space() == MemSpace::device) {
    const int si = idx(s);
    cudaEvent_t start = begin_gpu_op(si, {{&dst, true}});
    launch_scale(dst.data(), dst.dtype(), dst.numel(), f, stream(s), next_kernel_stamp());
    end_gpu_op(si, Phase::finalize, start, {{&dst, true}});
    if (in_step_) m_.division_device_bytes += 2 * dst.bytes();
    return;
  }
  if (in_step_) m_.division_host_bytes += 2 * dst.bytes();
  host_op(l, Phase::finalize, {{&dst, true}}, "scale", [&] {
    // NVTX only, as the CPU add's: nsys joins the step's host tasks into its step.
    nvtx::PhaseRange range(Phase::finalize, dst.bytes(), rank_, false);
    host_scale(dst.data(), dst.dtype(), dst.numel(), f, world_.host_threads());
  });
}

void CudaRank::generate(Buffer& grad, const GradKey& key, bool accumulate, Stream s) {
  set_device(device_);
  Lock l(mu_);
  in_space(grad, MemSpace::device, "generate", "gradient");
  const int si = idx(s);
  cudaEvent_t start = begin_gpu_op(si, {{&grad, true}});
  launch_generate(grad.data(), grad.dtype(), grad.numel(), key, accumulate, stream(s),
                  next_kernel_stamp());
  end_gpu_op(si, Phase::backward, start, {{&grad, true}});
}

void CudaRank::reduce_scatter(Buffer& out, const Buffer& in, ReduceOp op) {
  set_device(device_);
  Lock l(mu_);
  in_space(in, MemSpace::device, "reduce_scatter", "input");
  in_space(out, MemSpace::device, "reduce_scatter", "output");
  const int n = world_size();
  if (in.dtype() != out.dtype() || in.numel() != out.numel() * static_cast<uint64_t>(n))
    throw BackendError(who("reduce_scatter") + " of " + shape(in) + " into " + shape(out) +
                       ": output must be input/world_size elements of the same dtype");
  if (!comm_)
    throw NcclError(who("reduce_scatter") + ": no communicator (aborted after a failure)");
  const int si = idx(Stream::comm);
  cudaStream_t cs = stream(Stream::comm);
  wait_hazards(si, {{&in, false}, {&out, true}});
  // The gate (docs/DESIGN.md §6): the comm stream waits for the host to return from the call, so
  // the start event below is when the GPU reaches the collective, not the host's launch delay.
  const GateStamps g = next_gate_stamps();
  const uint64_t seq = gate_seq_ + 1;
  launch_gate(gate_flag_dev_, seq, g.dev, kGateSpinNs, cs);
  gate_seq_ = seq;
  // Released on every path out of here (an NCCL error, a settle timeout): no gate spins on.
  struct Release {
    CudaRank* r;
    uint64_t seq;
    ~Release() { r->release_gates(seq); }
  } release{this, seq};
  cudaEvent_t start = timing_.next();
  SA_CUDA_CHECK(cudaEventRecord(start, cs));
  ++collectives_;  // before the call: a rank that fails inside it still counts as having joined
  const ncclResult_t r =
      ncclReduceScatter(in.data(), out.data(), out.numel(), nccl_type(in.dtype()),
                        op == ReduceOp::avg ? ncclAvg : ncclSum, comm_.get(), cs);
  if (r == ncclInProgress)
    settle(comm_.get(), policy(), who("ncclReduceScatter"));
  else if (r != ncclSuccess)
    throw_nccl(r, "ncclReduceScatter", __FILE__, __LINE__);
  // The end event, then the end stamp, both queued before end_gpu_op releases the gate, so that
  // neither waits for the host. The stamp is outside the bracket: a one-thread kernel needs an SM,
  // and on the H200 it queued behind the compute stream's kernels for up to 0.4 ms.
  cudaEvent_t end = timing_.next();
  SA_CUDA_CHECK(cudaEventRecord(end, cs));
  launch_stamp(g.dev + 1, cs);  // the end, on the stamps' clock
  end_gpu_op(si, Phase::reduce_scatter, start, {{&in, false}, {&out, true}}, false, end);
  m_.nccl_input_bytes += in.bytes();
  ++m_.reduce_scatter_calls;
}

}  // namespace shardaccum::cuda
