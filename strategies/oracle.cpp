#include "strategies/oracle.hpp"

#include <algorithm>
#include <cmath>

namespace shardaccum {

double OracleResult::rel_err() const {
  if (ref_norm2 > 0) return std::sqrt(err_norm2 / ref_norm2);
  return std::sqrt(err_norm2);
}

void OracleResult::merge(const ShardCheck& c) {
  const double unit =
      c.ref_norm2 > 0 ? std::sqrt(c.err_norm2 / c.ref_norm2) : std::sqrt(c.err_norm2);
  max_unit_rel_err = std::max(max_unit_rel_err, std::isnan(unit) ? INFINITY : unit);
  err_norm2 += c.err_norm2;
  ref_norm2 += c.ref_norm2;
  nonfinite += c.nonfinite;
  bad_padding += c.bad_padding;
}

void OracleResult::merge(const OracleResult& o) {
  max_unit_rel_err = std::max(max_unit_rel_err, o.max_unit_rel_err);
  err_norm2 += o.err_norm2;
  ref_norm2 += o.ref_norm2;
  nonfinite += o.nonfinite;
  bad_padding += o.bad_padding;
}

namespace {
// Whether a bf16 holds a sum: the reduce or accum dtype, or the grad dtype, which holds the no-sync
// sums unless it differs from the reduce dtype (then they are held in the reduce dtype: copy-in;
// bf16-fp32-fp32's bf16 generator values are cast to fp32 exactly).
bool any_bf16(const DTypeTriple& t) {
  return (t.grad == DType::bf16 && t.grad == t.reduce) || t.reduce == DType::bf16 ||
         t.accum == DType::bf16;
}
}  // namespace

uint8_t dyadic_range(const DTypeTriple& t, int k, int world_size) {
  if (!any_bf16(t)) return 4;  // fp32 holds sums of 4*K*N/8 exactly far beyond any real K*N
  const int64_t terms = static_cast<int64_t>(k) * world_size;
  return static_cast<uint8_t>(std::clamp<int64_t>(256 / std::max<int64_t>(terms, 1), 1, 4));
}

bool sums_exact(const DTypeTriple& t, GenMode gen, int k, int world_size) {
  if (gen != GenMode::dyadic) return false;
  const int64_t terms = static_cast<int64_t>(k) * world_size;
  return !any_bf16(t) ? terms * 4 <= (int64_t{1} << 24)
                      : terms * dyadic_range(t, k, world_size) <= 256;
}

namespace {
bool power_of_two(double f) {
  int e = 0;
  return std::frexp(f, &e) == 0.5;
}
}  // namespace

double error_bound(const DTypeTriple& t, GenMode gen, int k, int world_size,
                   const DivisionSteps& d) {
  // The pre pass divides the reduce-scatter's input, which is in the reduce dtype: the gradient
  // itself (grad == reduce) or the copy-in's buffer.
  const double ua = unit_roundoff(t.accum), ur = unit_roundoff(t.reduce),
               u32 = unit_roundoff(DType::fp32);
  const double n = world_size;
  const bool exact = sums_exact(t, gen, k, world_size);
  // Per sync, the roundings of the division's passes (an exact quotient adds none when the sums
  // are exact; with rounding sums every pass is counted).
  double per_sync = 0;
  if (d.pre_pass && (!exact || !power_of_two(d.pre))) per_sync += ur + u32 + (n - 1) * ur;
  if (d.op == ReduceOp::avg && (!exact || !power_of_two(n))) per_sync += n * ur + u32;
  if (d.post_pass && (!exact || !power_of_two(d.post))) per_sync += ur + u32;
  if (per_sync > 0) per_sync += ua;  // the inexact quotients' add into the saved shard
  // In this order `end`'s figures are those of before the other divisions existed.
  double roundings = exact ? 0 : k * n * ur + k * ua;
  if (d.at_end) roundings += ua;
  roundings += k * per_sync;
  if (roundings == 0) roundings = ua;  // as `end`'s: the same bound where nothing rounds
  return 2.0 * roundings;  // x2: the norm-wise error of per-element bounds, with headroom
}

double oracle_threshold(const DTypeTriple& t, GenMode gen, int k, int world_size) {
  // 0.25/K <= 0.5*sqrt(1/K) for every K >= 1: with exact sums a witness's 1/K is the tighter test.
  return sums_exact(t, gen, k, world_size) ? 0.25 / k : 0.5 * std::sqrt(1.0 / k);
}

bool oracle_resolves(const DTypeTriple& t, GenMode gen, int k, int world_size,
                     const DivisionSteps& d) {
  return error_bound(t, gen, k, world_size, d) < oracle_threshold(t, gen, k, world_size);
}

bool is_correct(const OracleResult& r, double bound) {
  return r.nonfinite == 0 && r.bad_padding == 0 && std::isfinite(r.rel_err()) &&
         r.rel_err() <= bound && r.max_unit_rel_err <= bound;
}

void CaseVerdict::add(const std::vector<OracleResult>& per_rank) {
  if (per_rank.empty()) return;
  ++checked_steps_;
  for (const OracleResult& o : per_rank) {
    const double e = o.rel_err();
    max_rel_err_ = std::max(max_rel_err_, std::isfinite(e) ? e : INFINITY);
    all_correct_ = all_correct_ && is_correct(o, bound_);
  }
}

}  // namespace shardaccum
