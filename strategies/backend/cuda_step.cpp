// A cuda rank's steps: drains, step timing from CUDA events, CUPTI's totals of the step's window,
// the trace's GPU tracks, and the recovery of a rank after a failed run.
#include "strategies/backend/cuda_rank.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "common/errors.hpp"
#include "profiling/trace.hpp"
#include "strategies/backend/cuda_util.hpp"
#include "strategies/backend/cuda_world.hpp"
#include "strategies/backend/op_intervals.hpp"

namespace shardaccum::cuda {

void CudaRank::drain(const WaitPolicy& p, const std::string& what, bool watch_comm) {
  for (int s = 0; s < kStreamCount; ++s) {
    cudaEvent_t ev = marks_.next();
    SA_CUDA_CHECK(cudaEventRecord(ev, streams_[s].get()));
    wait_event(ev, watch_comm ? comm_.get() : nullptr, p,
               what + " (" + stream_name(s) + " stream)");
  }
}

void CudaRank::forget_pending() {
  for (auto& [p, a] : allocs_) {
    a.write = {};
    std::fill(std::begin(a.reads), std::end(a.reads), nullptr);
    std::fill(std::begin(a.views), std::end(a.views), nullptr);
    a.last_stream = -1;
  }
  for (DeferredFree& d : deferred_) arena_.free(d.p);
  deferred_.clear();
  ops_.clear();
  release_gates(gate_seq_);  // idle streams hold no gate; a value that releases every one issued
  step_gates_.clear();
  host_first_ = host_last_ = {};
  host_adds_.clear();
  in_step_ = false;  // a step abandoned by a failure is over too
  timing_.recycle();
  marks_.recycle();
}

void CudaRank::recover(const WaitPolicy& p) {
  try {
    if (std::exception_ptr task = settle_tasks(true))
      std::fprintf(stderr, "shardaccum cuda: rank %d recovery: a host task failed: %s\n", rank_,
                   error_text(task).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum cuda: rank %d recovery: %s\n", rank_, e.what());
  }
  set_device(device_);
  Lock l(mu_);
  release_gates(gate_seq_);  // before the drain: a gate left spinning would hold the comm stream
  drain(p, who("recovery"), false);
  forget_pending();
}

void CudaRank::begin_step() {
  if (std::exception_ptr e = settle_tasks(false)) std::rethrow_exception(e);
  set_device(device_);
  Lock l(mu_);
  drain(policy(), who("begin_step"));
  observe_idle_streams();
  forget_pending();
  ++step_seq_;
  for (auto it = user_live_.begin(); it != user_live_.end();) {  // keep this and the last step's
    if (it->second.step + 1 < step_seq_) {
      user_free_.push_back(it->second.slot);
      it = user_live_.erase(it);
    } else {
      ++it;
    }
  }
  m_ = StepMetrics{};
  uint64_t zero = 0;  // resets the high watermark to the memory in use now
  SA_CUDA_CHECK(cudaMemPoolSetAttribute(pool_.get(), cudaMemPoolAttrUsedMemHigh, &zero));
  pinned_peak_ = pinned_current_;
  pageable_peak_ = pageable_current_;
  // Every kernel stamp unset (all ones), before the step's start: the streams are idle.
  SA_CUDA_CHECK(
      cudaMemsetAsync(kernel_stamps_.get(), 0xff, kernel_stamps_.bytes(), stream(Stream::compute)));
  // The step starts at one event on the compute stream that the other streams wait for.
  step_start_ = timing_.next();
  SA_CUDA_CHECK(cudaEventRecord(step_start_, stream(Stream::compute)));
  // Slot 0: %globaltimer at the start event (the GPU is idle: microseconds after it), the
  // reference that places the stamped ops on the events' clock.
  launch_stamp(static_cast<uint64_t*>(kernel_stamps_.get()), stream(Stream::compute));
  stamps_used_ = 1;
  step_host_t0_ = trace::Clock::now();  // the streams are drained: the event completes about now
  SA_CUDA_CHECK(cudaStreamWaitEvent(stream(Stream::comm), step_start_, 0));
  SA_CUDA_CHECK(cudaStreamWaitEvent(stream(Stream::copy), step_start_, 0));
  SA_CUDA_CHECK(cudaStreamWaitEvent(stream(Stream::h2d), step_start_, 0));
  if (auto* c = world_.collector()) cupti_t0_ = c->now();
  in_step_ = true;
}

StepMetrics CudaRank::end_step() {
  // The host tasks first: the step ends after its last CPU add. A task's error is rethrown
  // once the step's figures are complete.
  const std::exception_ptr task_error = settle_tasks(false);
  set_device(device_);
  Lock l(mu_);
  if (!in_step_) throw BackendError(who("end_step") + " without begin_step");
  cudaEvent_t end = nullptr;
  std::exception_ptr wait_error;
  try {
    for (Stream s : {Stream::comm, Stream::copy, Stream::h2d}) {
      cudaEvent_t ev = marks_.next();
      SA_CUDA_CHECK(cudaEventRecord(ev, stream(s)));
      SA_CUDA_CHECK(cudaStreamWaitEvent(stream(Stream::compute), ev, 0));
    }
    end = timing_.next();
    SA_CUDA_CHECK(cudaEventRecord(end, stream(Stream::compute)));
    in_step_ = false;
    // After the end event: the copy of the stamps is not in the step's time.
    launch_copy_stamps(kernel_stamps_host_dev_, static_cast<const uint64_t*>(kernel_stamps_.get()),
                       2 * static_cast<uint64_t>(stamps_used_), stream(Stream::compute));
    cudaEvent_t copied = marks_.next();
    SA_CUDA_CHECK(cudaEventRecord(copied, stream(Stream::compute)));
    wait_event(copied, comm_.get(), policy(), who("end_step"));
  } catch (...) {
    in_step_ = false;
    wait_error = std::current_exception();
  }
  // Every rank of the process comes here once per step, also after a failed wait (the stamps'
  // exchange is a barrier of the process's ranks).
  gate_figures(l, !wait_error);
  if (wait_error) std::rethrow_exception(wait_error);
  // Each op's interval on the event clock (ms since the step's start event): phase times, the
  // reduce-scatters' union against the compute stream's backward (exposed_comm_ms), the trace.
  // A kernel's op by its stamp (its execution, as a profiler's kernel record), every other op
  // (copies, NCCL, cuBLAS) by its events (docs/DESIGN.md §6).
  std::vector<Interval> at(ops_.size()), rs, compute, d2h;
  std::vector<char> stamped(ops_.size(), 0);
  const volatile uint64_t* stamps = static_cast<const uint64_t*>(kernel_stamps_host_.get());
  const uint64_t ref_ns = stamps[0];
  float t0 = 0, t1 = 0;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const TimedOp& op = ops_[i];
    double ms = 0;
    const uint64_t b = op.stamp > 0 ? stamps[2 * op.stamp] : kStampUnset;
    const uint64_t e = op.stamp > 0 ? ~stamps[2 * op.stamp + 1] : 0;
    if (b != kStampUnset && e != 0 && e >= b && b >= ref_ns && ref_ns != kStampUnset) {
      at[i] = {(b - ref_ns) * 1e-6, (e - ref_ns) * 1e-6};
      ms = (e - b) * 1e-6;
      stamped[i] = 1;
    } else {
      SA_CUDA_CHECK(cudaEventElapsedTime(&t0, step_start_, op.start));
      SA_CUDA_CHECK(cudaEventElapsedTime(&t1, step_start_, op.end));
      at[i] = {t0, t1};
      // As the event pair's own elapsed time (not t1 − t0): the figures stay those of before.
      float ev = 0;
      SA_CUDA_CHECK(cudaEventElapsedTime(&ev, op.start, op.end));
      ms = ev;
    }
    m_.phase_ms[static_cast<int>(op.phase)] += ms;
    if (op.phase == Phase::reduce_scatter) {
      m_.nccl_ms += ms;
      rs.push_back(at[i]);
    } else if (op.phase == Phase::backward && op.stream == idx(Stream::compute)) {
      compute.push_back(at[i]);
    } else if (op.phase == Phase::d2h) {
      d2h.push_back(at[i]);
    }
  }
  m_.compute_ms = union_ms(compute);
  m_.exposed_comm_ms = uncovered_ms(rs, compute);
  // The event clock starts at step_start_, which the host clock's step_host_t0_ follows by
  // microseconds (the streams were idle): the CPU adds and the D2Hs on one clock, as the trace.
  m_.cpu_add_beside_d2h_ms = union_ms(host_adds_) - uncovered_ms(host_adds_, d2h);
  float ms = 0;
  SA_CUDA_CHECK(cudaEventElapsedTime(&ms, step_start_, end));
  m_.step_ms = ms;
  uint64_t high = 0;
  SA_CUDA_CHECK(cudaMemPoolGetAttribute(pool_.get(), cudaMemPoolAttrUsedMemHigh, &high));
  m_.peak_device_bytes = high;
  m_.peak_pinned_bytes = pinned_peak_;
  m_.peak_pageable_bytes = pageable_peak_;
  m_.accounted_h2d_bytes = m_.h2d_bytes;
  m_.accounted_d2h_bytes = m_.d2h_bytes;
  if (trace::current()) trace_ops_from_events(at, stamped);
  if (auto* c = world_.collector()) {
    // Every stream is idle: the window holds all of the step's records, none of the oracle's.
    const uint64_t t_end = c->now();
    const gpu_activity::WindowTotals w = c->totals(device_, cupti_t0_, t_end);
    m_.bytes_from_cupti = true;
    // CUPTI sees every H2D; the parameters' (copy_param, counted apart) are not the gradient's.
    m_.h2d_bytes = w.h2d_bytes - std::min(w.h2d_bytes, m_.param_h2d_bytes);
    m_.d2h_bytes = w.d2h_bytes;
    m_.nccl_kernel_ms = w.nccl_ms;
    m_.accumulate_kernel_ms = w.accumulate_ms;
    m_.generate_kernel_ms = w.generate_ms;
    if (auto* tt = trace::current()) {
      const uint32_t ids[4] = {
          c->stream_id(stream(Stream::compute)), c->stream_id(stream(Stream::comm)),
          c->stream_id(stream(Stream::copy)), c->stream_id(stream(Stream::h2d))};
      gpu_activity::append_to_trace(*tt, w.records, c->clock_map(),
                                    [&](uint32_t id) -> std::string {
                                      // Beside the backend's own tracks, not on them.
                                      if (id == ids[0]) return "CUPTI compute stream";
                                      if (id == ids[1]) return "CUPTI comm stream";
                                      if (id == ids[2]) return "CUPTI copy stream";
                                      if (id == ids[3]) return "CUPTI h2d stream";
                                      return "CUPTI other stream";
                                    });
      // NVTX ranges as CUPTI saw them (every thread of the process: asked once, by local rank 0).
      if (c->markers_enabled() && local_index() == 0)
        gpu_activity::append_markers_to_trace(*tt, c->markers(cupti_t0_, t_end), c->clock_map());
    }
  }
  forget_pending();  // every stream is idle: the end event follows all four
  if (task_error) std::rethrow_exception(task_error);
  return m_;
}

void CudaRank::trace_ops_from_events(const std::vector<Interval>& at,
                                     const std::vector<char>& stamped) {
  const trace::ThreadTrace* tt = trace::current();
  const auto host_time = [&](double ms) {
    return step_host_t0_ + std::chrono::duration_cast<trace::Clock::duration>(
                               std::chrono::duration<double, std::milli>(ms));
  };
  trace::Clock::time_point first = host_first_, last = host_last_;
  for (size_t i = 0; i < ops_.size(); ++i) {
    const auto b = host_time(at[i].first), e = host_time(at[i].second);
    if (first == trace::Clock::time_point{} || b < first) first = b;
    last = std::max(last, e);
    tt->complete(stream_name(ops_[i].stream) + std::string(" stream"), phase_name(ops_[i].phase),
                 trace::track::kGpuOpCategory, b, e,
                 {{"source", stamped[i] ? "kernel stamps" : "CUDA events"}});
  }
  if (first == trace::Clock::time_point{}) return;  // a step without GPU work or host tasks
  tt->complete(trace::track::kGpuStep, "step " + std::to_string(tt->step) + " " + tt->case_name,
               trace::track::kGpuStepCategory, first, last, {{"step_ms", m_.step_ms}});
}

}  // namespace shardaccum::cuda
