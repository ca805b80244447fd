// Issue 11 item 14: no result in which a contribution is lost, duplicated or added to the wrong
// unit is judged correct, at any unit size and seed, while the positive control keeps its
// sqrt(3/4) error on large units. Results are built from the generator with one fault each and
// judged as real cases are: the host backend's check_shard, merged per rank, then is_correct.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "strategies/backend/host_backend.hpp"
#include "strategies/step_driver.hpp"
#include "test_support.hpp"

namespace shardaccum {
namespace {

// The witness elements need each key's shard size; these helpers also build at the base commit,
// whose keys had no such field, so the test can be shown failing there.
template <class Key>
void set_shard(Key& k, uint64_t shard) {
  if constexpr (requires { k.shard; }) k.shard = shard;
}

/// One contribution to a unit's sum: the gradient of (src_unit, mb, rank), `times` times.
struct Term {
  uint32_t src_unit, mb, rank;
  int times;
};

/// A case's shape: K micro-batches, N ranks, `units` units of `numel` elements each.
struct Shape {
  uint64_t seed;
  int k, n, units;
  uint64_t numel;
  DTypeTriple dtypes;
  uint64_t shard() const { return shard_numel(numel, n); }
  uint8_t range() const { return dyadic_range(dtypes, k, n); }
};

GradKey grad_key(const Shape& s, uint32_t unit, uint32_t mb, uint32_t rank) {
  GradKey g{s.seed, 1, mb, rank, unit, s.numel, GenMode::dyadic, s.range()};
  set_shard(g, s.shard());
  return g;
}

OracleKey oracle_key(const Shape& s, uint32_t unit, uint32_t rank) {
  OracleKey o{s.seed,
              1,
              static_cast<uint32_t>(s.k),
              static_cast<uint32_t>(s.n),
              rank,
              unit,
              s.numel,
              s.shard() * rank,
              GenMode::dyadic,
              s.dtypes.grad,
              s.range()};
  set_shard(o, s.shard());
  return o;
}

/// The correct terms of unit u: every (mb, rank) once.
std::vector<Term> correct_terms(const Shape& s, uint32_t u) {
  std::vector<Term> t;
  for (int mb = 0; mb < s.k; ++mb)
    for (int r = 0; r < s.n; ++r)
      t.push_back({u, static_cast<uint32_t>(mb), static_cast<uint32_t>(r), 1});
  return t;
}

/// A faulty run: the terms each unit received (units absent from the map are correct).
using Fault = std::function<void(const Shape&, std::vector<std::vector<Term>>&)>;

/// Judges faulty runs of one shape as real cases are judged: per rank, the host backend's
/// check_shard of every unit merged into one OracleResult, then is_correct with the case's bound.
class Judge {
 public:
  Judge(RankBackend& be, const Shape& s)
      : be_(be),
        s_(s),
        bound_(error_bound(s.dtypes, GenMode::dyadic, s.k, s.n)),
        shard_(be.allocate(MemSpace::device, DType::fp32, s.shard(), Stream::compute)) {
    // g_[unit][mb][rank][i] over the padded unit, from the generator (rounded as backward does).
    const uint64_t padded = s.shard() * s.n;
    g_.assign(static_cast<size_t>(s.units) * s.k * s.n * padded, 0.0f);
    for (int u = 0; u < s.units; ++u)
      for (int mb = 0; mb < s.k; ++mb)
        for (int r = 0; r < s.n; ++r) {
          const GradKey key = grad_key(s, u, mb, r);
          for (uint64_t i = 0; i < padded; ++i) {
            float v = grad_value(key, i);
            if (s.dtypes.grad == DType::bf16) v = bf16_to_float(float_to_bf16(v));
            g_[index(u, mb, r, i)] = v;
          }
        }
    for (int u = 0; u < s.units; ++u) good_.push_back(correct_terms(s, static_cast<uint32_t>(u)));
    for (int u = 0; u < s.units; ++u) good_checks_.push_back(check_unit(u, good_[u]));
  }

  const std::vector<std::vector<Term>>& good() const { return good_; }

  /// Whether the oracle calls the run correct; units whose terms equal the correct ones reuse
  /// the correct result's checks (the same numbers check_shard would return).
  bool judged_correct(const std::vector<std::vector<Term>>& terms) {
    std::vector<std::vector<ShardCheck>> checks = good_checks_;
    for (int u = 0; u < s_.units; ++u)
      if (!same(terms[u], good_[u])) checks[u] = check_unit(u, terms[u]);
    bool all = true;
    for (int r = 0; r < s_.n; ++r) {
      OracleResult o;
      for (int u = 0; u < s_.units; ++u) o.merge(checks[u][r]);
      all = all && is_correct(o, bound_);
    }
    return all;
  }

 private:
  size_t index(int u, int mb, int r, uint64_t i) const {
    return ((static_cast<size_t>(u) * s_.k + mb) * s_.n + r) * (s_.shard() * s_.n) + i;
  }
  static bool same(const std::vector<Term>& a, const std::vector<Term>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (a[i].src_unit != b[i].src_unit || a[i].mb != b[i].mb || a[i].rank != b[i].rank ||
          a[i].times != b[i].times)
        return false;
    return true;
  }
  /// Every rank's check of unit u holding `terms` (summed in fp32 as the strategies do, then
  /// divided by N and stored in the accum dtype).
  std::vector<ShardCheck> check_unit(int u, const std::vector<Term>& terms) {
    std::vector<ShardCheck> out;
    float* v = static_cast<float*>(shard_.data());
    for (int r = 0; r < s_.n; ++r) {
      for (uint64_t j = 0; j < s_.shard(); ++j) {
        const uint64_t i = s_.shard() * r + j;
        float sum = 0;
        for (const Term& t : terms)
          sum += static_cast<float>(t.times) * g_[index(t.src_unit, t.mb, t.rank, i)];
        v[j] = sum / static_cast<float>(s_.n);
        if (s_.dtypes.accum == DType::bf16) v[j] = bf16_to_float(float_to_bf16(v[j]));
      }
      out.push_back(be_.check_shard(shard_, oracle_key(s_, u, r)));
    }
    return out;
  }

  RankBackend& be_;
  const Shape& s_;
  double bound_;
  Buffer shard_;
  std::vector<float> g_;
  std::vector<std::vector<Term>> good_;
  std::vector<std::vector<ShardCheck>> good_checks_;
};

/// The faults of the issue. Unit 2 is the victim; units 3 (adjacent) and 5 (not) receive
/// misplaced contributions. m0 and p0 vary with the seed.
std::vector<std::pair<std::string, Fault>> faults(const Shape& s) {
  const uint32_t m0 = static_cast<uint32_t>(s.seed % s.k), p0 = static_cast<uint32_t>(s.seed % s.n);
  std::vector<std::pair<std::string, Fault>> f;
  f.emplace_back("micro-batch lost", [=](const Shape&, auto& t) {
    std::erase_if(t[2], [&](const Term& x) { return x.mb == m0; });
  });
  if (s.k > 1)
    f.emplace_back("all but the last micro-batch lost (offload copy)", [=](const Shape& sh,
                                                                           auto& t) {
      for (auto& unit : t)
        std::erase_if(unit, [&](const Term& x) { return x.mb + 1 != static_cast<uint32_t>(sh.k); });
    });
  f.emplace_back("micro-batch duplicated", [=](const Shape&, auto& t) {
    for (Term& x : t[2])
      if (x.mb == m0) x.times = 2;
  });
  // Finer than the issue's faults: 1/(K*N) of a witness, resolved when the bound is below it.
  if (error_bound(s.dtypes, GenMode::dyadic, s.k, s.n) < 0.25 / (s.k * s.n))
    f.emplace_back("one (micro-batch, rank) lost", [=](const Shape&, auto& t) {
      std::erase_if(t[2], [&](const Term& x) { return x.mb == m0 && x.rank == p0; });
    });
  if (s.n > 1)
    f.emplace_back("rank lost", [=](const Shape&, auto& t) {
      std::erase_if(t[2], [&](const Term& x) { return x.rank == p0; });
    });
  for (uint32_t dst : {3u, 5u}) {
    const std::string where = dst == 3 ? " (adjacent)" : " (not adjacent)";
    f.emplace_back("micro-batch added to the wrong unit" + where, [=](const Shape&, auto& t) {
      for (const Term& x : t[2])
        if (x.mb == m0) t[dst].push_back(x);
      std::erase_if(t[2], [&](const Term& x) { return x.mb == m0; });
    });
    // A swap keeps every count: caught at the witnesses when the units' magnitudes differ
    // (m_u = 1 + u mod r: units 2 and 3 or 5 differ for r >= 2; r = 3 makes 2 and 5 equal).
    if (s.range() >= 2 && (dst - 2) % s.range() != 0)
      f.emplace_back("micro-batches swapped between units" + where, [=](const Shape&, auto& t) {
        for (Term& x : t[2])
          if (x.mb == m0) x.src_unit = dst;
        for (Term& x : t[dst])
          if (x.mb == m0) x.src_unit = 2;
      });
  }
  return f;
}

/// Runs every fault on every shape; returns the faults judged correct (must be none).
std::vector<std::string> missed_faults(const std::vector<Shape>& shapes, int* judged) {
  std::vector<std::string> missed;
  auto be = make_host_backend({1, 1});
  be->run([&](RankBackend& rb) {
    for (const Shape& s : shapes) {
      Judge judge(rb, s);
      const std::string where = " seed " + std::to_string(s.seed) + " numel " +
                                std::to_string(s.numel) + " K " + std::to_string(s.k) + " N " +
                                std::to_string(s.n) + " " + s.dtypes.name();
      // The control: the fault-free result is correct, or the faults below would prove nothing.
      if (!judge.judged_correct(judge.good()))
        missed.push_back("correct result judged WRONG:" + where);
      for (const auto& [name, fault] : faults(s)) {
        auto t = judge.good();
        fault(s, t);
        ++*judged;
        if (judge.judged_correct(t)) missed.push_back(name + where);
      }
    }
  });
  return missed;
}

std::string first_lines(const std::vector<std::string>& v) {
  std::string out = std::to_string(v.size()) + " judged correct, e.g.:\n";
  for (size_t i = 0; i < v.size() && i < 8; ++i) out += "  " + v[i] + "\n";
  return out;
}

TEST(OracleWitness, NoLostDuplicatedOrMisplacedContributionIsJudgedCorrect) {
  // Seeds 0..199 x unit sizes 1..64 x world sizes 1..4; K cycles through 1..8 with seed + numel.
  std::vector<Shape> shapes;
  const DTypeTriple fp32 = parse_dtype_triple("fp32-fp32-fp32");
  for (uint64_t seed = 0; seed < 200; ++seed)
    for (uint64_t numel = 1; numel <= 64; ++numel)
      for (int n = 1; n <= 4; ++n)
        shapes.push_back({seed, 1 + static_cast<int>((seed + numel) % 8), n, 6, numel, fp32});
  int judged = 0;
  const auto missed = missed_faults(shapes, &judged);
  EXPECT_GT(judged, 200 * 64 * 4 * 6);
  EXPECT_TRUE(missed.empty()) << first_lines(missed);
}

TEST(OracleWitness, Bf16CasesWithAReducedRangeAreNotFooledEither) {
  // bf16 keeps sums exact with r = 256 / (K*N) (dyadic_range): r = 4, 2 and 1 here. With a bf16
  // accumulator (bound 2^-7) only K < 32 resolves (oracle_resolves); those are the ones run.
  std::vector<Shape> shapes;
  const std::pair<int, int> kn[] = {{4, 2}, {8, 3}, {16, 4}, {32, 4}, {64, 4}};
  for (const char* dt : {"bf16-bf16-fp32", "bf16-bf16-bf16"})
    for (uint64_t seed = 0; seed < 12; ++seed)
      for (uint64_t numel : {1, 2, 7, 8, 9, 33, 64})
        for (auto [k, n] : kn)
          if (oracle_resolves(parse_dtype_triple(dt), GenMode::dyadic, k, n))
            shapes.push_back({seed, k, n, 6, numel, parse_dtype_triple(dt)});
  EXPECT_EQ(shapes.size(), 12u * 7 * (5 + 3));  // bf16 accumulation refuses K = 32 and 64
  int judged = 0;
  const auto missed = missed_faults(shapes, &judged);
  EXPECT_GT(judged, static_cast<int>(shapes.size()) * 6);
  EXPECT_TRUE(missed.empty()) << first_lines(missed);
}

CasePlan copy_plan(const Layout& layout, uint64_t seed) {
  const StrategySpec copy{"data-free", "copy", "shape"};
  return CasePlan{layout,
                  canonical_schedule("sync", 4),
                  copy,
                  parse_dtype_triple("fp32-fp32-fp32"),
                  GenMode::dyadic,
                  seed,
                  "t"};
}

TEST(OracleWitness, IssueCaseOneElementCopySsssIsWrongForEverySeed) {
  // uniform:1x1, world 1, --offload copy --mode shape, SSSS: seed 8 was judged correct.
  auto be = make_host_backend({1, 1});
  for (uint64_t seed = 0; seed < 24; ++seed) {
    const auto o = testing::run_two_steps(*be, copy_plan(testing::make_layout({1}), seed));
    EXPECT_FALSE(o.correct) << "seed " << seed << " max_rel_err " << o.max_rel_err;
  }
}

TEST(OracleWitness, PositiveControlKeepsSqrtThreeQuartersOnALargeUnit) {
  // Three of four micro-batches lost: sqrt(3/4) = 0.866 (FSDP1 shows 0.871); the witnesses,
  // 1 in 1024 elements, move it by less than 0.001.
  auto be = make_host_backend({2, 1});
  const auto o = testing::run_two_steps(*be, copy_plan(testing::make_layout({1u << 20}), 0x5a5a));
  EXPECT_FALSE(o.correct);
  EXPECT_GT(o.max_rel_err, 0.86);
  EXPECT_LT(o.max_rel_err, 0.88);
}

}  // namespace
}  // namespace shardaccum
