// The host-task worker of a cuda rank (cuda_rank.hpp, "Threads"): CPU adds and pinned scales run
// in order on one thread per rank, at most host_task_depth pending behind the rank's thread.
#include "strategies/backend/cuda_rank.hpp"

#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include "profiling/trace.hpp"
#include "strategies/backend/cuda_util.hpp"
#include "strategies/backend/cuda_world.hpp"

namespace shardaccum::cuda {

bool CudaRank::on_worker() const { return worker_id_.load() == std::this_thread::get_id(); }

void CudaRank::worker_loop() {
  worker_id_ = std::this_thread::get_id();  // before the first task: a task's calls see it
  try {
    set_device(device_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardaccum cuda: rank %d host-task worker: %s\n", rank_, e.what());
  }
  for (;;) {
    HostTask t;
    bool skip = false;
    {
      Lock l(task_mu_);
      task_cv_.wait(l, [&] { return task_stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      t = std::move(tasks_.front());
      tasks_.pop_front();
      skip = task_cancel_;
    }
    if (!skip) {
      try {
        if (t.ev) wait_event(t.ev, nullptr, policy(), who("host task"));
        t.fn();
      } catch (...) {
        std::lock_guard<std::mutex> g(task_mu_);
        if (!task_error_) task_error_ = std::current_exception();
        task_cancel_ = true;  // the step's later tasks are skipped; end_step reports the error
      }
    }
    t.fn = nullptr;  // frees what the task holds (its staging) before it counts as done
    {
      std::lock_guard<std::mutex> g(task_mu_);
      tasks_done_.fetch_add(1);
    }
    task_cv_.notify_all();
  }
}

void CudaRank::wait_tasks(uint64_t upto, const char* what) {
  if (on_worker()) return;  // a task never waits for itself or later ones
  Lock l(task_mu_);
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(policy().timeout_s));
  while (tasks_done_.load() < upto)
    if (task_cv_.wait_until(l, deadline) == std::cv_status::timeout && tasks_done_.load() < upto)
      throw WaitTimeout(who(what) + ": host tasks did not finish within " +
                        std::to_string(policy().timeout_s) + " s");
}

void CudaRank::after_tasks(Lock& l, std::initializer_list<const Buffer*> operands, const char* op) {
  if (on_worker()) return;
  const uint64_t queued = tasks_queued_.load();
  if (tasks_done_.load() >= queued) return;
  bool touched = false;
  for (const Buffer* b : operands) {
    if (!b || !is_host(b->space())) continue;
    const Alloc* a = find_alloc(*b);  // a view: its allocation's epoch
    touched = touched || (a && a->task_epoch < queued);
  }
  if (!touched) return;
  l.unlock();
  wait_tasks(queued, op);
  l.lock();
}

void CudaRank::host_task(Event e, std::function<void()> task) {
  const int depth = world_.options().host_task_depth;
  if (depth <= 0 || on_worker()) {  // at once (and a task queuing a task runs it in place)
    host_wait(e);
    task();
    return;
  }
  cudaEvent_t ev = nullptr;
  if (e.id) {
    Lock l(mu_);
    ev = user_event(e, "host_task");
  }
  if (const trace::ThreadTrace* tt = trace::current())  // the worker records into the same trace
    task = [target = *tt, inner = std::move(task)] {
      trace::ThreadTraceScope scope(target);
      inner();
    };
  if (!worker_.joinable()) worker_ = std::thread([this] { worker_loop(); });
  // At most `depth` tasks pending once this one is queued: each may hold a pinned staging.
  const uint64_t queued = tasks_queued_.load();
  if (queued + 1 > static_cast<uint64_t>(depth)) wait_tasks(queued + 1 - depth, "host_task");
  HostTask dropped;
  {
    std::lock_guard<std::mutex> g(task_mu_);
    if (task_cancel_) {
      dropped.fn = std::move(task);  // a task failed: the step's later tasks are skipped
    } else {
      tasks_.push_back({ev, std::move(task)});
      tasks_queued_.fetch_add(1);
    }
  }
  task_cv_.notify_all();
}

std::exception_ptr CudaRank::settle_tasks(bool cancel) {
  if (cancel) {
    std::lock_guard<std::mutex> g(task_mu_);
    task_cancel_ = true;
  }
  wait_tasks(tasks_queued_.load(), "host tasks");
  std::lock_guard<std::mutex> g(task_mu_);
  task_cancel_ = false;
  return std::exchange(task_error_, nullptr);
}

}  // namespace shardaccum::cuda
