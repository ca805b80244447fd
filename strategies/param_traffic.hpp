#pragma once
// Parameter traffic under CPU offload (--param-traffic on, docs/DESIGN.md §2): FSDP keeps each
// unit's sharded parameters in pinned host memory and copies them to the GPU before the unit's
// forward and again before its backward (FSDP2 _fsdp_param.py all_gather_inputs, `.to(device,
// non_blocking=True)`; FSDP1 _flat_param.py pre_unshard), competing for PCIe with the gradient's
// copies. The all-gather that follows at world N is out of scope: only the shard P_u/N is copied.
#include <cstdint>
#include <vector>

#include "strategies/backend/backend.hpp"
#include "strategies/unit_grad.hpp"

namespace shardaccum {

/// One rank's parameter copies for one case. Inactive (every call a no-op) unless the case has
/// --param-traffic on, which CaseSpec keeps for offloaded strategies only.
class ParamTraffic {
 public:
  /// `param` is the parameter dtype (the gradient dtype: b_param = dtype_bytes(grad)).
  ParamTraffic(bool active, DType param) : active_(active), param_(param) {}
  bool active() const { return active_; }
  /// The forward of one micro-batch, modelled as a copy phase at its start (the suite runs no
  /// forward compute): for each unit, first to last, its shard P_u/N is copied on the h2d stream
  /// into a fresh device buffer, the compute stream waits for it (the forward would read it), and
  /// the buffer is freed (reshard after forward). Allocates the pinned host shards at the first
  /// call (once per case: FSDP's CPU-resident parameters, in the pinned peak).
  void forward(RankBackend& be, const std::vector<UnitGrad>& units);
  /// Before unit u's backward: its shard copied on the h2d stream into a device buffer that the
  /// caller holds until the backward is issued; the compute stream waits for the copy.
  Buffer before_backward(RankBackend& be, const UnitGrad& u);

 private:
  Buffer fetch(RankBackend& be, const UnitGrad& u);
  bool active_;
  DType param_;
  std::vector<Buffer> host_;  // per unit index: its sharded parameters, pinned, once per case
};

}  // namespace shardaccum
