#include "strategies/backend/host_backend.hpp"

#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/errors.hpp"
#include "profiling/trace.hpp"
#include "strategies/backend/host_elements.hpp"
#include "strategies/backend/machine_facts.hpp"
#include "strategies/backend/rank_barrier.hpp"

namespace shardaccum {
namespace detail {
void poison(void* p, DType t, uint64_t n) {
  if (t == DType::fp32) {
    float* f = static_cast<float*>(p);
    for (uint64_t i = 0; i < n; ++i) f[i] = std::nanf("");
  } else {
    uint16_t* b = static_cast<uint16_t*>(p);
    for (uint64_t i = 0; i < n; ++i) b[i] = 0x7fc0;
  }
}
}  // namespace detail

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

/// State shared by the rank threads of one Backend::run: the rendezvous of the collectives.
struct Rendezvous {
  explicit Rendezvous(int n) : barrier(n), inputs(n) {}
  RankBarrier barrier;
  std::vector<const Buffer*> inputs;

  void arrive(const char* op) {
    barrier.arrive_and_wait(RankBarrier::kNoTimeout, std::string("host backend: ") + op);
  }
};

/// One memory space: live allocations, current and peak bytes.
struct Arena {
  struct Block {
    uint64_t counted = 0;  // the bytes the arena counts (an allocator's rounding included)
    uint64_t bytes = 0;    // the bytes allocated
  };
  std::unordered_map<const void*, Block> live;
  uint64_t current = 0, peak = 0;
};

class HostRank final : public RankBackend {
 public:
  HostRank(int rank, int world, int threads) : rank_(rank), world_(world), threads_(threads) {}
  HostRank(const HostRank&) = delete;  // owns its arenas' allocations
  HostRank& operator=(const HostRank&) = delete;
  ~HostRank() override {
    for (Arena& a : arenas_)
      for (auto& [p, block] : a.live) free_block(const_cast<void*>(p), block.bytes);
  }
  void attach(Rendezvous* r) { rv_ = r; }

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }

  Buffer allocate(MemSpace space, DType dtype, uint64_t numel, Stream) override {
    return allocate_counted(space, dtype, numel, numel * dtype_bytes(dtype));
  }

  // Counted at the allocator's power of two; the buffer itself holds only what was asked for.
  Buffer allocate_host_cached(DType dtype, uint64_t numel, Stream,
                              std::span<const uint64_t> pieces) override {
    if (numel == 0) throw BackendError("host backend: allocate of 0 elements");
    return allocate_counted(MemSpace::pinned_host, dtype, numel,
                            host_cached_bytes(numel, pieces, dtype, "host backend"));
  }

  Buffer allocate_pinned_counted(DType dtype, uint64_t numel, Stream, uint64_t counted) override {
    if (numel == 0) throw BackendError("host backend: allocate of 0 elements");
    return allocate_counted(MemSpace::pinned_host, dtype, numel,
                            counted ? counted : numel * dtype_bytes(dtype));
  }

  void set_cpu_add_threads(int threads) override {
    add_threads_ = threads > 0 ? threads : threads_;
  }

  void release(Buffer& b) noexcept override {
    Arena& a = arena(b.space());
    auto it = a.live.find(b.data());
    if (it == a.live.end()) return;  // not ours: nothing to account (never expected)
    detail::poison(b.data(), b.dtype(), b.numel());
    a.current -= it->second.counted;
    const uint64_t bytes = it->second.bytes;
    a.live.erase(it);
    free_block(b.data(), bytes);
  }

  void copy(Buffer& dst, const Buffer& src, Stream s) override { copy_counted(dst, src, s, false); }

  void copy_param(Buffer& dst, const Buffer& src, Stream s) override {
    if (is_host(dst.space()))
      throw BackendError("host backend: copy_param of " + shape(src) + " into " + shape(dst) +
                         ": the parameters' copy lands on the device");
    copy_counted(dst, src, s, true);
  }

  // `param`: the parameters' copies (copy_param), counted apart from the gradient path's bytes.
  void copy_counted(Buffer& dst, const Buffer& src, Stream s, bool param) {
    expect_live(dst, "copy", "destination");
    expect_live(src, "copy", "source");
    if (dst.dtype() != src.dtype() || dst.numel() != src.numel())
      throw BackendError("host backend: copy between " + shape(src) + " and " + shape(dst) +
                         ": copies move bytes, dtype and numel must match");
    if (is_host(dst.space()) && is_host(src.space()))
      throw BackendError("host backend: host-to-host copy is not a transfer of this suite");
    const bool h2d = is_host(src.space());
    const bool d2h = is_host(dst.space());
    const auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), src.bytes());
    if (h2d) {
      (param ? m_.param_h2d_bytes : m_.h2d_bytes) += src.bytes();
      done(Phase::h2d, t0, trace::track::of(s), "copy", src.bytes());
    } else if (d2h) {
      m_.d2h_bytes += src.bytes();
      if (dst.space() == MemSpace::pageable_host) m_.d2h_pageable_bytes += src.bytes();
      done(Phase::d2h, t0, trace::track::of(s), "copy", src.bytes());
    } else if (param) {  // FSDP2's all-gather copy-out, on the compute stream
      m_.param_d2d_bytes += src.bytes();
      done(Phase::backward, t0, trace::track::of(s), "copy", src.bytes());
    } else {
      done(Phase::accumulate, t0, trace::track::of(s), "copy", src.bytes());
    }
  }

  void add(Buffer& dst, const Buffer& src, MemSpace space, Stream stream) override {
    expect_in(dst, space, "add", "accumulator", true);
    expect_in(src, space, "add", "addend", true);
    if (dst.numel() != src.numel())
      throw BackendError("host backend: add of " + shape(src) + " into " + shape(dst) +
                         ": numel differs");
    const auto t0 = Clock::now();
    const DType dt = dst.dtype(), st = src.dtype();
    void* d = dst.data();
    const void* s = src.data();
    const int64_t n = static_cast<int64_t>(dst.numel());
    const int team = space == MemSpace::device ? threads_ : add_threads_;
#pragma omp parallel for num_threads(team) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      detail::store(d, dt, i, detail::load(d, dt, i) + detail::load(s, st, i));
    // Bytes read + written: both operands read, the accumulator written.
    if (space == MemSpace::device) {
      m_.accumulate_bytes += src.bytes() + 2 * dst.bytes();
      done(Phase::accumulate, t0, trace::track::of(stream), "add", src.bytes());
    } else {
      m_.cpu_add_bytes += src.bytes() + 2 * dst.bytes();
      done(Phase::cpu_add, t0, trace::track::kHost, "add", src.bytes());
    }
  }

  void convert(Buffer& dst, const Buffer& src, Stream s) override {
    expect_in(dst, MemSpace::device, "convert", "destination");
    expect_in(src, MemSpace::device, "convert", "source");
    if (dst.numel() != src.numel())
      throw BackendError("host backend: convert with different numel");
    const auto t0 = Clock::now();
    for (uint64_t i = 0; i < dst.numel(); ++i)
      detail::store(dst.data(), dst.dtype(), i, detail::load(src.data(), src.dtype(), i));
    m_.accumulate_bytes += src.bytes() + dst.bytes();
    done(Phase::accumulate, t0, trace::track::of(s), "convert", src.bytes());
  }

  void scale(Buffer& dst, double factor, Stream s) override {
    expect_live(dst, "scale", "operand");
    const auto t0 = Clock::now();
    const float f = static_cast<float>(factor);
    const int64_t n = static_cast<int64_t>(dst.numel());
    void* d = dst.data();
    const DType t = dst.dtype();
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < n; ++i) detail::store(d, t, i, detail::load(d, t, i) * f);
    (dst.space() == MemSpace::device ? m_.division_device_bytes : m_.division_host_bytes) +=
        2 * dst.bytes();
    const char* track = dst.space() == MemSpace::device ? trace::track::of(s) : trace::track::kHost;
    done(Phase::finalize, t0, track, "scale", dst.bytes());
  }

  void generate(Buffer& grad, const GradKey& key, bool accumulate, Stream s) override {
    expect_in(grad, MemSpace::device, "generate", "gradient");
    const auto t0 = Clock::now();
    void* g = grad.data();
    const DType t = grad.dtype();
    const int64_t n = static_cast<int64_t>(grad.numel());
    const GenParams params = gen_params(key);
    const uint64_t valid = key.numel;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<uint64_t>(i) < valid ? grad_value_at(params, i) : 0.0f;
      detail::store(g, t, i, accumulate ? detail::load(g, t, i) + v : v);
    }
    done(Phase::backward, t0, trace::track::of(s), "generate", grad.bytes());
  }

  // The CLI refuses --backward gemm on this backend; a direct call gets the same reason.
  void gemm_backward(Buffer&, const FlatParam& unit, uint64_t, bool, Buffer&, Stream) override {
    throw BackendError("host backend: gemm_backward of unit " + unit.name +
                       ": --backward gemm runs cuBLAS GEMMs and needs the cuda backend");
  }

  void reduce_scatter(Buffer& out, const Buffer& in, ReduceOp op = ReduceOp::sum) override {
    expect_in(in, MemSpace::device, "reduce_scatter", "input");
    expect_in(out, MemSpace::device, "reduce_scatter", "output");
    if (in.dtype() != out.dtype() || in.numel() != out.numel() * world_)
      throw BackendError("host backend: reduce_scatter of " + shape(in) + " into " + shape(out) +
                         ": output must be input/world_size elements of the same dtype");
    const auto t0 = Clock::now();
    rv_->inputs[rank_] = &in;
    rv_->arrive("reduce_scatter");
    // Sum in fp32 in rank order, round once to the reduce dtype (NCCL's bf16 sum may round per
    // hop; with the oracle's dyadic values both are exact). avg: that sum divided by N in fp32
    // before the one rounding (NCCL premultiplies by 1/N; the oracle's bound covers both).
    const uint64_t n = out.numel(), off = n * rank_;
    const bool avg = op == ReduceOp::avg;
    for (uint64_t j = 0; j < n; ++j) {
      float s = 0;
      for (int r = 0; r < world_; ++r)
        s += detail::load(rv_->inputs[r]->data(), in.dtype(), off + j);
      detail::store(out.data(), out.dtype(), j, avg ? s / static_cast<float>(world_) : s);
    }
    rv_->arrive("reduce_scatter");  // no rank frees its input before every rank has read its shard
    m_.nccl_input_bytes += in.bytes();
    ++m_.reduce_scatter_calls;
    done(Phase::reduce_scatter, t0, trace::track::kComm, "reduce_scatter", in.bytes());
  }

  Event record(Stream) override { return Event{++events_}; }
  void wait(Stream, Event) override {}  // one thread executes in issue order
  void host_wait(Event) override {}

  bool any_rank(bool mine) override {
    return rv_->barrier.any(rank_, mine, RankBarrier::kNoTimeout, "host backend: any_rank");
  }

  ShardCheck check_shard(const Buffer& shard, const OracleKey& key) override {
    expect_live(shard, "check_shard", "shard");
    ShardCheck c;
    const int64_t n = static_cast<int64_t>(shard.numel());
    const void* p = shard.data();
    const DType t = shard.dtype();
    double err = 0, ref = 0;
    uint64_t nonfinite = 0, bad_padding = 0;
    const std::vector<uint64_t> prefixes = oracle_prefixes(key);
#pragma omp parallel for num_threads(threads_) reduction(+ : err, ref, nonfinite, bad_padding)
    for (int64_t j = 0; j < n; ++j) {
      check_element(key, prefixes.data(), static_cast<uint64_t>(j), detail::load(p, t, j), err, ref,
                    nonfinite, bad_padding);
    }
    c.err_norm2 = err;
    c.ref_norm2 = ref;
    c.nonfinite = nonfinite;
    c.bad_padding = bad_padding;
    return c;
  }

  void begin_step() override {
    m_ = StepMetrics{};
    for (Arena& a : arenas_) a.peak = a.current;
    step_start_ = Clock::now();
    first_op_ = last_op_ = Clock::time_point{};
  }

  StepMetrics end_step() override {
    m_.step_ms = ms_since(step_start_);
    m_.peak_device_bytes = arena(MemSpace::device).peak;
    m_.peak_pinned_bytes = arena(MemSpace::pinned_host).peak;
    m_.peak_pageable_bytes = arena(MemSpace::pageable_host).peak;
    // The contract's GPU-time fields from the host's wall times: every op runs alone (no overlap,
    // no peer wait measured apart from the call).
    m_.nccl_ms = m_.nccl_link_ms = m_.phase_ms[static_cast<int>(Phase::reduce_scatter)];
    m_.exposed_comm_ms = m_.nccl_ms;
    m_.compute_ms = m_.phase_ms[static_cast<int>(Phase::backward)];
    const trace::ThreadTrace* tt = trace::current();
    if (tt && first_op_ != Clock::time_point{})  // the step as its ops span it, first to last
      tt->complete(trace::track::kGpuStep, "step " + std::to_string(tt->step) + " " + tt->case_name,
                   trace::track::kGpuStepCategory, first_op_, last_op_,
                   {{"step_ms", m_.step_ms}, {"source", "host backend"}});
    return m_;
  }

 private:
  Arena& arena(MemSpace s) { return arenas_[static_cast<int>(s)]; }

  /// A buffer of `numel` elements counted as `counted` bytes of `space`. Pageable memory is not
  /// poisoned (not pre-touched, as a fresh malloc: its first writer faults its pages in).
  Buffer allocate_counted(MemSpace space, DType dtype, uint64_t numel, uint64_t counted) {
    if (numel == 0) throw BackendError("host backend: allocate of 0 elements");
    const uint64_t bytes = numel * dtype_bytes(dtype);
    void* p = allocate_block(bytes);
    if (space != MemSpace::pageable_host) detail::poison(p, dtype, numel);
    Arena& a = arena(space);
    a.live.emplace(p, Arena::Block{counted, bytes});
    a.current += counted;
    a.peak = std::max(a.peak, a.current);
    return Buffer(this, p, space, dtype, numel);
  }

  // A buffer of kMappedBytes or more is its own mapping, returned to the system on release, never
  // left to glibc's heap: under its dynamic mmap threshold freed buffers came back from the heap,
  // and the small allocations of --trace (one event per op) kept their pages resident: a default
  // host matrix with --trace grew to 24 GB (break-it review, 2026-12-05); uniform:8x64K, 16 cases,
  // from 271 MB to 27 MB. Only the host backend: the cuda backend's pageable buffers keep glibc's
  // behaviour, which they model (reports/host-glibc-pageable-1204).
  static constexpr uint64_t kMappedBytes = uint64_t{64} << 10;

  static void* allocate_block(uint64_t bytes) {
    if (bytes < kMappedBytes) {
      void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
      if (!p) throw std::bad_alloc();
      return p;
    }
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }

  static void free_block(void* p, uint64_t bytes) noexcept {
    if (bytes < kMappedBytes)
      std::free(p);
    else
      munmap(p, bytes);
  }

  /// Attributes the time since t0 to phase `p` and, when this thread records a trace, records
  /// the op on `track` (name = the phase; category "gpu op" on a stream track, "host" on the host
  /// tasks track, as the cuda backend; args op, bytes, source). Host wall-clock times.
  void done(Phase p, Clock::time_point t0, const char* track, const char* op, uint64_t bytes) {
    const auto t1 = Clock::now();
    m_.phase_ms[static_cast<int>(p)] += std::chrono::duration<double, std::milli>(t1 - t0).count();
    if (first_op_ == Clock::time_point{}) first_op_ = t0;
    last_op_ = t1;
    if (const trace::ThreadTrace* tt = trace::current()) {
      const bool host = std::string_view(track) == trace::track::kHost;
      tt->complete(track, phase_name(p), host ? "host" : trace::track::kGpuOpCategory, t0, t1,
                   {{"op", op}, {"bytes", bytes}, {"source", "host backend"}});
    }
  }

  static std::string shape(const Buffer& b) {
    return std::string(space_name(b.space())) + " " + dtype_name(b.dtype()) + "[" +
           std::to_string(b.numel()) + "]";
  }
  /// True when `b` is a live buffer or a view (Buffer::view) inside one.
  bool is_live(const Buffer& b) {
    const Arena& a = arena(b.space());
    if (a.live.contains(b.data())) return true;
    const auto p = reinterpret_cast<uintptr_t>(b.data());
    for (const auto& [q, block] : a.live) {  // a view: few live buffers, a scan is enough
      const auto base = reinterpret_cast<uintptr_t>(q);
      if (p >= base && p + b.bytes() <= base + block.bytes) return true;
    }
    return false;
  }
  void expect_live(const Buffer& b, const char* op, const char* role) {
    if (!b) throw BackendError(std::string("host backend: ") + op + ": " + role + " is empty");
    if (!is_live(b))
      throw BackendError(std::string("host backend: ") + op + ": " + role + " " + shape(b) +
                         " is not a live buffer of rank " + std::to_string(rank_) + " (freed?)");
  }
  /// `either_host`: an operand of a CPU add, which may be in either host space (add_operand_in).
  void expect_in(const Buffer& b, MemSpace s, const char* op, const char* role,
                 bool either_host = false) {
    expect_live(b, op, role);
    if (either_host ? !add_operand_in(b.space(), s) : b.space() != s)
      throw BackendError(std::string("host backend: ") + op + ": " + role + " " + shape(b) +
                         " is in the wrong memory space (expected " + space_name(s) + ")");
  }

  int rank_, world_, threads_;
  int add_threads_ = threads_;  // the CPU adds' team (set_cpu_add_threads)
  Rendezvous* rv_ = nullptr;
  Arena arenas_[kMemSpaceCount];
  StepMetrics m_;
  Clock::time_point step_start_;
  Clock::time_point first_op_{}, last_op_{};  // the step's first op start and last op end
  uint64_t events_ = 0;
};

class HostBackend final : public Backend {
 public:
  explicit HostBackend(const HostBackendOptions& o) : opts_(o) {
    for (int r = 0; r < o.world_size; ++r)
      ranks_.push_back(std::make_unique<HostRank>(r, o.world_size, std::max(1, o.add_threads)));
  }
  std::string name() const override { return "host"; }
  int world_size() const override { return opts_.world_size; }
  bool gpu_times() const override { return false; }
  int host_add_threads() const override { return std::max(1, opts_.add_threads); }

  void run(const std::function<void(RankBackend&)>& fn) override {
    Rendezvous rv(opts_.world_size);
    std::vector<std::exception_ptr> errors(opts_.world_size);
    std::vector<std::thread> threads;
    for (int r = 0; r < opts_.world_size; ++r) {
      ranks_[r]->attach(&rv);
      try {
        threads.emplace_back([&, r] {
          try {
            fn(*ranks_[r]);
          } catch (...) {
            errors[r] = std::current_exception();
            rv.barrier.fail();  // peers blocked in a collective, now or later, give up
            return;
          }
          rv.barrier.leave();
        });
      } catch (const std::system_error& e) {
        // The ranks never started would hold the others in a collective: let them drop out.
        rv.barrier.fail();
        for (auto& t : threads) t.join();
        throw std::runtime_error("host backend: cannot start " + std::to_string(opts_.world_size) +
                                 " rank threads (" + e.what() + "); use a smaller --world-size");
      }
    }
    for (auto& t : threads) t.join();
    rethrow_root_cause(errors);
  }

  nlohmann::json context() const override {
    return {{"backend", "host"},
            {"time_domain", "host wall-clock"},
            {"world_size", opts_.world_size},
            {"add_threads", opts_.add_threads},
            {"hardware_threads", std::thread::hardware_concurrency()},
            {"machine_facts", machine::machine_context({})},
            {"nccl_time_method",
             "host backend: no NCCL; nccl_ms is the host wall time of its reduce_scatter calls "
             "(rendezvous included), nccl_wait_ms 0"}};
  }

 private:
  HostBackendOptions opts_;
  std::vector<std::unique_ptr<HostRank>> ranks_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const HostBackendOptions& opts) {
  if (opts.world_size < 1 || opts.world_size > 1024)
    throw std::invalid_argument("--world-size " + std::to_string(opts.world_size) +
                                ": the host backend needs 1..1024 ranks");
  return std::make_unique<HostBackend>(opts);
}

}  // namespace shardaccum
