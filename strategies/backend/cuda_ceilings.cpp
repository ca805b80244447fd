// Ceilings (docs/DESIGN.md §6), measured the way the strategies use the hardware: every rank at
// once (a barrier starts each measurement together), on the rank's own streams, both copy
// directions at once for `bidir`. Per rank figures in GB/s (1e9 B/s), averaged over the ranks.
#include <chrono>
#include <cstring>
#include <functional>
#include <type_traits>

#include "common/gemm_shape.hpp"
#include "strategies/backend/cuda_gemm.hpp"
#include "strategies/backend/cuda_world.hpp"
#include "strategies/backend/machine_facts.hpp"

namespace shardaccum::cuda {

namespace {

struct RankCeilings {
  double h2d = 0, d2h = 0, bidir = 0, device_copy = 0, rs_algbw = 0, rs_busbw = 0, host_add = 0;
  double host_memory = 0;  // the CPU add and D2H copies at once: both their bytes per second
  double host_add_during_d2h = 0;  // of which the CPU add's (Ceilings::host_add_during_d2h_gbps)
  double accumulate = 0;  // the suite's own add kernel alone (not a ceiling: measured against one)
  double generate = 0;    // the generator kernel alone, 1e9 elements per second
  double sm_overlap = 0;  // the generator and the add kernel at once (Ceilings::sm_overlap)
  double gemm_bf16 = 0, gemm_fp32 = 0;  // dense GEMM, TFLOP/s (0: not measured)
  uint64_t gemm_n = 0;                  // its size n (n x n x n)
};

double gbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0; }

constexpr int kCeilingTries = 3;  // each ceiling is the best of this many timed means
// The host add's ceilings take more tries: host memory is shared with the machine's other work, and
// on one H200 VM (16 cores) the best of 3 read 63 to 142 GB/s in eleven runs within four minutes,
// once below what the cases' own adds then kept (87 GB/s: steps 7% under their bound). A try is
// 20 to 40 ms, so 12 of them cost under half a second per rank and outlast short disturbances.
constexpr int kHostTries = 12;

}  // namespace

nlohmann::json CudaWorld::measure_ceilings() {
  if (!dead_.empty()) throw CudaError("cuda backend unusable: " + dead_);
  if (!comms_ok_) init_comms();
  const int n = opts_.world_size;
  Busy busy(*this);
  std::vector<RankCeilings> res(local_count());
  // Per rank, per entry of ceiling_gemm_layouts then of ceiling_generate_layouts: one micro-batch
  // of its GEMM backward, then of its synthetic backward (the generator alone), in ms.
  const size_t layouts = opts_.ceiling_gemm_layouts.size();
  const size_t gen_layouts = opts_.ceiling_generate_layouts.size();
  const size_t timed_layouts = layouts + gen_layouts;
  std::vector<std::vector<double>> layout_ms(local_count(),
                                             std::vector<double>(timed_layouts, 0.0));
  const auto t0 = std::chrono::steady_clock::now();

  // Its operands streamed from DRAM, as the cases' adds of GB-sized shards are (STREAM's rule): on
  // one H200 VM (L3 300 MiB) 256 MiB operands read 125 to 161 GB/s within one device call while the
  // cases' adds kept 92 to 103 (reports/h200-limit-1204b).
  const uint64_t host_add_bytes = machine::stream_operand_bytes(
      opts_.ceiling_host_add_bytes, machine::last_level_cache_bytes(), local_count());
  auto errors = run_ranks([&](int r) {
    CudaRank& rank = *ranks_[r];
    const WaitPolicy p = policy();
    const std::string what = "rank " + std::to_string(rank.rank()) + ": ceilings";
    cudaStream_t compute = rank.stream(Stream::compute), comm = rank.stream(Stream::comm),
                 copy = rank.stream(Stream::copy);
    UniqueEvent start(true), stop(true), join(false);

    // Mean ms of one iteration of `issue` (enqueued `iters` times after one warm-up), all ranks
    // starting together; the first stream in `streams` carries the timing, the others join it.
    auto timed_once = [&](const std::function<void()>& issue,
                          std::initializer_list<cudaStream_t> streams, int iters) {
      issue();  // warm-up, completed on every stream before the ranks start together
      for (cudaStream_t s : streams) {
        SA_CUDA_CHECK(cudaEventRecord(join.get(), s));
        wait_event(join.get(), rank.comm(), p, what);
      }
      all_ranks_barrier(rank, p, what);
      cudaStream_t first = *streams.begin();
      SA_CUDA_CHECK(cudaEventRecord(start.get(), first));
      for (cudaStream_t s : streams)
        if (s != first) SA_CUDA_CHECK(cudaStreamWaitEvent(s, start.get(), 0));
      for (int i = 0; i < iters; ++i) issue();
      for (cudaStream_t s : streams)
        if (s != first) {
          SA_CUDA_CHECK(cudaEventRecord(join.get(), s));
          SA_CUDA_CHECK(cudaStreamWaitEvent(first, join.get(), 0));
        }
      SA_CUDA_CHECK(cudaEventRecord(stop.get(), first));
      wait_event(stop.get(), rank.comm(), p, what);
      float ms = 0;
      SA_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
      return static_cast<double>(ms) / iters;
    };
    // The best (least) of three such means: a ceiling is what the hardware can do, and one mean
    // read 11-42% low on a busy host (one H200: host add 58 against 100 GB/s, bidir 81 against 92),
    // so phases ran above their "ceiling" and steps below their bound.
    auto timed = [&](const std::function<void()>& issue,
                     std::initializer_list<cudaStream_t> streams, int iters) {
      double best = timed_once(issue, streams, iters);
      for (int i = 1; i < kCeilingTries; ++i)
        best = std::min(best, timed_once(issue, streams, iters));
      return best;
    };

    // Pinned copies, one direction and both at once.
    const uint64_t cb = opts_.ceiling_copy_bytes;
    const uint64_t db = opts_.ceiling_device_copy_bytes;
    PinnedMemory hsrc(cb), hdst(cb);
    std::memset(hsrc.get(), 0, cb);
    std::memset(hdst.get(), 0, cb);
    DeviceMemory da(std::max(cb, db)), dbuf(std::max(cb, db));
    SA_CUDA_CHECK(cudaMemsetAsync(da.get(), 0, da.bytes(), compute));
    SA_CUDA_CHECK(cudaMemsetAsync(dbuf.get(), 0, dbuf.bytes(), compute));
    SA_CUDA_CHECK(cudaStreamSynchronize(compute));
    auto h2d = [&](cudaStream_t s) {
      SA_CUDA_CHECK(cudaMemcpyAsync(da.get(), hsrc.get(), cb, cudaMemcpyHostToDevice, s));
    };
    auto d2h = [&](cudaStream_t s) {
      SA_CUDA_CHECK(cudaMemcpyAsync(hdst.get(), dbuf.get(), cb, cudaMemcpyDeviceToHost, s));
    };
    res[r].h2d = gbps(cb, timed([&] { h2d(copy); }, {copy}, 4));
    res[r].d2h = gbps(cb, timed([&] { d2h(copy); }, {copy}, 4));
    res[r].bidir = gbps(2.0 * cb, timed(
                                      [&] {
                                        h2d(copy);
                                        d2h(comm);
                                      },
                                      {copy, comm}, 4));

    // Device copy: bytes read + written.
    res[r].device_copy =
        gbps(2.0 * db, timed(
                           [&] {
                             SA_CUDA_CHECK(cudaMemcpyAsync(dbuf.get(), da.get(), db,
                                                           cudaMemcpyDeviceToDevice, compute));
                           },
                           {compute}, 10));
    // The accumulate kernel alone on the same bytes (fp32 += fp32: 8 B read + 4 B written per
    // element), to compare with the device copy: in a step it shares HBM with NCCL and the
    // generator, so the step's accumulate_frac_ceiling is lower than the kernel's own.
    res[r].accumulate = gbps(3.0 * db, timed(
                                           [&] {
                                             launch_add(dbuf.get(), DType::fp32, da.get(),
                                                        DType::fp32, db / 4, false, compute);
                                           },
                                           {compute}, 10));

    // The generator (the synthetic backward, docs/DESIGN.md §6 "Bound"): dyadic fp32 values, as a
    // unit's first micro-batch writes them; its own rate, like the GEMM's for --backward gemm.
    GradKey gk;
    gk.numel = db / 4;
    gk.shard = db / 4;
    res[r].generate =
        static_cast<double>(db / 4) /
        (timed([&] { launch_generate(da.get(), DType::fp32, db / 4, gk, false, compute); },
               {compute}, 10) *
         1e-3) /
        1e9;

    // The generator beside the add kernel (Ceilings::sm_overlap): the generator writes `da` on the
    // compute stream while the comm stream (the greatest priority, as the reduce-scatter's adds
    // run in a step) adds one half of `dbuf` into the other, as many times as take the
    // generator's time alone. No data is shared, so nothing waits but for the SMs and HBM.
    {
      const uint64_t gen_n = db / 4, add_n = db / 8;
      auto* half = static_cast<char*>(dbuf.get()) + add_n * 4;
      auto gen = [&] { launch_generate(da.get(), DType::fp32, gen_n, gk, false, compute); };
      auto add = [&] {
        launch_add(dbuf.get(), DType::fp32, half, DType::fp32, add_n, false, comm);
      };
      const double gen_ms = timed(gen, {compute}, 10), add_ms = timed(add, {comm}, 10);
      const int adds = add_ms > 0 ? std::max(1, static_cast<int>(gen_ms / add_ms + 0.5)) : 1;
      const double both_ms = timed(
          [&] {
            gen();
            for (int i = 0; i < adds; ++i) add();
          },
          {compute, comm}, 10);
      res[r].sm_overlap = both_ms > 0 ? (gen_ms + adds * add_ms) / both_ms : 0;
    }

    // Dense GEMM in each gradient dtype of the run's --backward gemm cases: best of three means.
    for (DType t : opts_.ceiling_gemm_dtypes) {
      uint64_t gn = opts_.ceiling_gemm_n;
      size_t free_b = 0, total_b = 0;
      SA_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
      while (gn > 256 && 3 * gn * gn * dtype_bytes(t) > free_b / 4) gn /= 2;
      DeviceMemory ga(gn * gn * dtype_bytes(t)), gb(gn * gn * dtype_bytes(t)),
          gc(gn * gn * dtype_bytes(t)), gws(kCublasWorkspaceBytes);
      launch_gemm_operands(ga.get(), gb.get(), t, gn, gn, gn, compute);  // no zeros: full power
      GemmHandle h;
      cublasContext* ch = h.bind(rank.device(), compute, gws.get(), kCublasWorkspaceBytes);
      const bool tf32 = t == DType::fp32 && opts_.ceiling_gemm_tf32;
      auto gemm = [&] {
        dense_gemm(ch, t, tf32, static_cast<int>(gn), ga.get(), gb.get(), gc.get());
      };
      const double best = timed(gemm, {compute}, 3);
      const double tflops = best > 0 ? 2.0 * gn * gn * gn / (best * 1e-3) / 1e12 : 0;
      (t == DType::fp32 ? res[r].gemm_fp32 : res[r].gemm_bf16) = tflops;
      res[r].gemm_n = gn;
    }

    // Each layout's GEMM backward alone (bound.hpp at_own_shapes): one micro-batch, every unit in
    // backward order, through the step's own calls (issue_unit_gemms, its operands filled where
    // the unit before left others) on a gradient of the largest unit, filled as the generator
    // fills it, and the workspace gemm_workspace_numel would size.
    for (size_t li = 0; li < opts_.ceiling_gemm_layouts.size(); ++li) {
      const GemmCeilingCase& gc = opts_.ceiling_gemm_layouts[li];
      const DType t = gc.grad;
      const size_t eb = dtype_bytes(t);
      uint64_t grad_numel = 1, operands = 0;
      for (const FlatParam& u : gc.layout->units) {
        grad_numel = std::max(grad_numel, u.numel);
        operands = std::max(operands, gemm_operands(u, gc.tokens).end);
      }
      DeviceMemory gbuf(grad_numel * eb), wbuf(operands * eb + kCublasWorkspaceBytes);
      GradKey gk;
      gk.numel = grad_numel;
      gk.shard = grad_numel;
      launch_generate(gbuf.get(), t, grad_numel, gk, false, compute);
      GemmHandle h;
      auto* ws = static_cast<char*>(wbuf.get());
      cublasContext* ch = h.bind(rank.device(), compute, ws + operands * eb, kCublasWorkspaceBytes);
      const bool tf32 = t == DType::fp32 && opts_.ceiling_gemm_tf32;
      const auto& units = gc.layout->units;
      GemmOperandFill filled;  // kept over the timed micro-batches, as a step's workspace keeps it
      auto backward = [&] {
        for (auto u = units.rbegin(); u != units.rend(); ++u)
          issue_unit_gemms(ch, *u, gc.tokens, t, tf32, gbuf.get(), ws, filled, compute);
      };
      layout_ms[r][li] = timed(backward, {compute}, 1);
    }

    // Each synthetic layout's generator alone (bound.hpp at_own_shapes): one micro-batch, every
    // unit in backward order, each writing its own numel with its own key, as a step's first
    // micro-batch does, into a buffer of the largest unit. Three micro-batches a mean: one of a
    // small layout takes well under a millisecond.
    for (size_t gi = 0; gi < gen_layouts; ++gi) {
      const GenerateCeilingCase& gc = opts_.ceiling_generate_layouts[gi];
      uint64_t grad_numel = 1;
      for (const FlatParam& u : gc.layout->units) grad_numel = std::max(grad_numel, u.numel);
      DeviceMemory gbuf(grad_numel * dtype_bytes(gc.grad));
      const auto& units = gc.layout->units;
      auto backward = [&] {
        for (size_t ui = units.size(); ui-- > 0;) {
          GradKey uk;
          uk.unit = static_cast<uint32_t>(ui);
          uk.numel = units[ui].numel;
          uk.shard = units[ui].numel;
          launch_generate(gbuf.get(), gc.grad, units[ui].numel, uk, false, compute);
        }
      };
      layout_ms[r][layouts + gi] = timed(backward, {compute}, 3);
    }

    // Reduce-scatter, fp32 sum; nccl-tests: algbw = count*N*typesize / time, busbw = algbw*(N-1)/N.
    const uint64_t count = std::max<uint64_t>(1, opts_.ceiling_reduce_scatter_bytes / 4 / n);
    DeviceMemory rs_in(count * n * 4), rs_out(count * 4);
    SA_CUDA_CHECK(cudaMemsetAsync(rs_in.get(), 0, rs_in.bytes(), comm));
    auto rs = [&] {
      const ncclResult_t res_ = ncclReduceScatter(rs_in.get(), rs_out.get(), count, ncclFloat32,
                                                  ncclSum, rank.comm(), comm);
      if (res_ == ncclInProgress)
        settle(rank.comm(), p, what + " (reduce-scatter)");
      else if (res_ != ncclSuccess)
        throw_nccl(res_, "ncclReduceScatter", __FILE__, __LINE__);
    };
    rs();  // a second warm-up: the first call also sets up connections
    const double rs_ms = timed(rs, {comm}, 10);
    res[r].rs_algbw = gbps(static_cast<double>(count) * n * 4, rs_ms);
    res[r].rs_busbw = res[r].rs_algbw * (n - 1) / n;

    // Host add a += b in fp32 on this rank's threads, all ranks at once: 12 bytes per element.
    const uint64_t hb = host_add_bytes;
    PinnedMemory ha, hbm;
    void* a = hdst.get();
    void* b = hsrc.get();
    if (hb > cb) {
      ha = PinnedMemory(hb);
      hbm = PinnedMemory(hb);
      std::memset(ha.get(), 0, hb);
      std::memset(hbm.get(), 0, hb);
      a = ha.get();
      b = hbm.get();
    }
    const uint64_t el = hb / 4;
    host_add(a, DType::fp32, b, DType::fp32, el, host_threads_);  // warm-up (thread team)
    all_ranks_barrier(rank, p, what);
    // Three adds a try on 256 MiB operands (2.4 GB moved), fewer on larger ones, at least one
    // (3.8 GB on the 1200 MiB of one H200 VM).
    const int host_iters = static_cast<int>(std::max<uint64_t>(1, 3 * (uint64_t{256} << 20) / hb));
    double hms = 0;  // the best of kHostTries, as `timed`
    for (int t = 0; t < kHostTries; ++t) {
      const auto h0 = std::chrono::steady_clock::now();
      for (int i = 0; i < host_iters; ++i)
        host_add(a, DType::fp32, b, DType::fp32, el, host_threads_);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count();
      hms = t ? std::min(hms, ms) : ms;
    }
    res[r].host_add = gbps(12.0 * el * host_iters, hms);

    // The CPU add while D2H copies land in host memory, as cpu-add runs them: D2Hs of `cb` bytes
    // into a pinned buffer of their own, back to back on the copy stream, about 4/5 of the add's
    // time alone, issued just before the add starts, so they run inside it. Host memory's rate is
    // then the add's bytes over its wall time plus the D2Hs' over their GPU time (each an upper
    // figure: the add also ran alone at its end, the D2Hs only inside it).
    PinnedMemory landed(cb);
    std::memset(landed.get(), 0, cb);
    const double add_ms =
        res[r].host_add > 0 ? 12.0 * el * host_iters / (res[r].host_add * 1e9) * 1e3 : 0;
    const double d2h_ms = res[r].d2h > 0 ? cb / (res[r].d2h * 1e9) * 1e3 : 0;
    const int copies = d2h_ms > 0 ? std::max(1, static_cast<int>(0.8 * add_ms / d2h_ms)) : 1;
    double both_add = 0, both_d2h = 0;  // of the try with the most bytes per second together
    for (int t = 0; t < kHostTries; ++t) {
      all_ranks_barrier(rank, p, what);
      SA_CUDA_CHECK(cudaEventRecord(start.get(), copy));
      for (int i = 0; i < copies; ++i)
        SA_CUDA_CHECK(cudaMemcpyAsync(landed.get(), dbuf.get(), cb, cudaMemcpyDeviceToHost, copy));
      SA_CUDA_CHECK(cudaEventRecord(stop.get(), copy));
      const auto h0 = std::chrono::steady_clock::now();
      for (int i = 0; i < host_iters; ++i)
        host_add(a, DType::fp32, b, DType::fp32, el, host_threads_);
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - h0).count();
      wait_event(stop.get(), rank.comm(), p, what);
      float cms = 0;
      SA_CUDA_CHECK(cudaEventElapsedTime(&cms, start.get(), stop.get()));
      const double add_rate = gbps(12.0 * el * host_iters, ms),
                   d2h_rate = gbps(static_cast<double>(cb) * copies, cms);
      if (add_rate + d2h_rate > both_add + both_d2h) {
        both_add = add_rate;
        both_d2h = d2h_rate;
      }
    }
    res[r].host_memory = both_add + both_d2h;
    res[r].host_add_during_d2h = both_add;
    SA_CUDA_CHECK(cudaDeviceSynchronize());
  });
  for (const auto& e : errors)
    if (e) {
      destroy_comms(true);
      recover(errors);
      rethrow_root(errors);
    }

  if (multi_process()) {  // every process's figures, so that the means are the world's
    static_assert(std::is_trivially_copyable_v<RankCeilings>);
    std::vector<std::vector<uint8_t>> all(n);
    const auto* mine = reinterpret_cast<const uint8_t*>(&res[0]);
    all[rank_base()].assign(mine, mine + sizeof(RankCeilings));
    allgather(all);
    std::vector<std::vector<uint8_t>> all_ms(n);
    const auto* my_ms = reinterpret_cast<const uint8_t*>(layout_ms[0].data());
    all_ms[rank_base()].assign(my_ms, my_ms + timed_layouts * sizeof(double));
    allgather(all_ms);
    res.assign(n, RankCeilings{});
    layout_ms.assign(n, std::vector<double>(timed_layouts, 0.0));
    for (int r = 0; r < n; ++r) {
      if (all[r].size() != sizeof(RankCeilings) ||
          all_ms[r].size() != timed_layouts * sizeof(double))
        throw CudaError("ceilings: rank " + std::to_string(r) + " sent " +
                        std::to_string(all[r].size() + all_ms[r].size()) + " bytes");
      std::memcpy(&res[r], all[r].data(), sizeof(RankCeilings));
      if (timed_layouts > 0)
        std::memcpy(layout_ms[r].data(), all_ms[r].data(), timed_layouts * sizeof(double));
    }
  }
  auto mean = [&](double RankCeilings::*f) {
    double s = 0;
    for (const auto& x : res) s += x.*f;
    return s / n;
  };
  // The typed ceilings (Backend::ceilings) and the context's ceiling_*_gbps keys: one set of means.
  Ceilings c;
  c.h2d_gbps = mean(&RankCeilings::h2d);
  c.d2h_gbps = mean(&RankCeilings::d2h);
  c.bidir_gbps = mean(&RankCeilings::bidir);
  c.device_copy_gbps = mean(&RankCeilings::device_copy);
  c.reduce_scatter_busbw_gbps = mean(&RankCeilings::rs_busbw);
  c.reduce_scatter_algbw_gbps = mean(&RankCeilings::rs_algbw);
  c.host_add_gbps = mean(&RankCeilings::host_add);
  c.host_memory_gbps = mean(&RankCeilings::host_memory);
  c.host_add_during_d2h_gbps = mean(&RankCeilings::host_add_during_d2h);
  c.gemm_tflops_bf16 = mean(&RankCeilings::gemm_bf16);
  c.gemm_tflops_fp32 = mean(&RankCeilings::gemm_fp32);
  c.generate_gelems = mean(&RankCeilings::generate);
  c.sm_overlap = mean(&RankCeilings::sm_overlap);
  nlohmann::json gemm_backward = nlohmann::json::array();
  for (size_t li = 0; li < layouts; ++li) {
    const GemmCeilingCase& gc = opts_.ceiling_gemm_layouts[li];
    GemmBackwardCeiling g{gc.layout->name, gc.tokens, gc.grad, 0, 0};
    for (const auto& per_rank : layout_ms) g.ms += per_rank[li] / n;
    for (const FlatParam& u : gc.layout->units) g.flops += gemm_flops(u, gc.tokens);
    c.gemm_backward.push_back(g);
    gemm_backward.push_back({{"layout", g.layout},
                             {"tokens", g.tokens},
                             {"grad", dtype_name(g.grad)},
                             {"ms", g.ms},
                             {"tflops", g.ms > 0 ? g.flops / (g.ms * 1e-3) / 1e12 : 0.0}});
  }
  nlohmann::json generate_layouts = nlohmann::json::array();
  for (size_t gi = 0; gi < gen_layouts; ++gi) {
    const GenerateCeilingCase& gc = opts_.ceiling_generate_layouts[gi];
    GenerateLayoutCeiling g{gc.layout->name, gc.grad, 0, 0};
    for (const auto& per_rank : layout_ms) g.ms += per_rank[layouts + gi] / n;
    for (const FlatParam& u : gc.layout->units) g.elements += u.numel;
    c.generate_layouts.push_back(g);
    generate_layouts.push_back(
        {{"layout", g.layout},
         {"grad", dtype_name(g.grad)},
         {"ms", g.ms},
         {"gelems", g.ms > 0 ? static_cast<double>(g.elements) / (g.ms * 1e-3) / 1e9 : 0.0}});
  }
  nlohmann::json per_rank = nlohmann::json::array();
  for (const auto& x : res)
    per_rank.push_back({{"h2d_gbps", x.h2d},
                        {"d2h_gbps", x.d2h},
                        {"bidir_gbps", x.bidir},
                        {"device_copy_gbps", x.device_copy},
                        {"reduce_scatter_algbw_gbps", x.rs_algbw},
                        {"reduce_scatter_busbw_gbps", x.rs_busbw},
                        {"host_add_gbps", x.host_add},
                        {"host_memory_gbps", x.host_memory},
                        {"host_add_during_d2h_gbps", x.host_add_during_d2h},
                        {"accumulate_kernel_gbps", x.accumulate},
                        {"generate_gelems", x.generate},
                        {"sm_overlap", x.sm_overlap},
                        {"gemm_tflops_bf16", x.gemm_bf16},
                        {"gemm_tflops_fp32", x.gemm_fp32}});
  nlohmann::json j = {
      {"ceiling_h2d_gbps", c.h2d_gbps},
      {"ceiling_d2h_gbps", c.d2h_gbps},
      {"ceiling_bidir_gbps", c.bidir_gbps},
      {"ceiling_device_copy_gbps", c.device_copy_gbps},
      {"ceiling_reduce_scatter_busbw_gbps", c.reduce_scatter_busbw_gbps},
      {"ceiling_reduce_scatter_algbw_gbps", c.reduce_scatter_algbw_gbps},
      {"ceiling_host_add_gbps", c.host_add_gbps},
      {"ceiling_host_memory_gbps", c.host_memory_gbps},
      {"ceiling_host_add_during_d2h_gbps", c.host_add_during_d2h_gbps},
      {"ceiling_generate_gelems", c.generate_gelems},
      {"ceiling_sm_overlap", c.sm_overlap},
      {"accumulate_kernel_gbps", mean(&RankCeilings::accumulate)},
      {"accumulate_kernel_frac_device_copy",
       mean(&RankCeilings::device_copy) > 0
           ? mean(&RankCeilings::accumulate) / mean(&RankCeilings::device_copy)
           : 0.0},
      {"ceiling_per_rank", per_rank},
      {"ceiling_copy_bytes", opts_.ceiling_copy_bytes},
      {"ceiling_device_copy_bytes", opts_.ceiling_device_copy_bytes},
      {"ceiling_reduce_scatter_bytes", opts_.ceiling_reduce_scatter_bytes},
      {"ceiling_reduce_scatter_dtype", "fp32"},
      {"ceiling_host_add_bytes", host_add_bytes},
      {"ceiling_host_add_threads", host_threads_},
      {"ceiling_seconds",
       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
  // Only the dtypes measured: a key is a figure of this run, never a 0 for "not asked".
  for (DType t : opts_.ceiling_gemm_dtypes)
    j[std::string("ceiling_gemm_tflops_") + dtype_name(t)] =
        t == DType::fp32 ? c.gemm_tflops_fp32 : c.gemm_tflops_bf16;
  // One micro-batch of each layout's GEMM backward alone: a JSON string, as ceiling_per_rank, so
  // that Google Benchmark's context (string values) carries it.
  if (layouts > 0) j["ceiling_gemm_backward"] = gemm_backward;
  // And of each synthetic layout's generator alone, likewise.
  if (gen_layouts > 0) j["ceiling_generate_layouts"] = generate_layouts;
  if (!opts_.ceiling_gemm_dtypes.empty()) {
    j["ceiling_gemm_n"] = res[0].gemm_n;
    j["ceiling_gemm_tf32"] = opts_.ceiling_gemm_tf32;
  }
  {
    std::lock_guard<std::mutex> l(ceilings_mutex_);
    ceilings_ = j;
    typed_ceilings_ = c;
  }
  return j;
}

}  // namespace shardaccum::cuda
