#include "profiling/nvtx.hpp"

#if defined(SHARDACCUM_HAVE_NVTX)
#include <nvtx3/nvToolsExt.h>
#endif

namespace shardaccum::nvtx {

#if defined(SHARDACCUM_HAVE_NVTX)
namespace {
nvtxDomainHandle_t domain() {
  static nvtxDomainHandle_t d = nvtxDomainCreateA("shardaccum");
  return d;
}
// One colour per phase, so a timeline reads at a glance.
constexpr uint32_t kPhaseColour[kPhaseCount] = {0xff4e79a7, 0xfff28e2b, 0xff59a14f, 0xffe15759,
                                                0xff76b7b2, 0xffedc948, 0xffb07aa1};
nvtxStringHandle_t phase_string(Phase p) {
  static nvtxStringHandle_t s[kPhaseCount] = {};
  static bool init = [] {
    for (int i = 0; i < kPhaseCount; ++i)
      s[i] = nvtxDomainRegisterStringA(domain(), phase_name(static_cast<Phase>(i)));
    return true;
  }();
  (void)init;
  return s[static_cast<int>(p)];
}

void push_phase(Phase p, uint64_t bytes, int rank) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = static_cast<uint32_t>(rank);
  a.colorType = NVTX_COLOR_ARGB;
  a.color = kPhaseColour[static_cast<int>(p)];
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = phase_string(p);
  a.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  a.payload.ullValue = bytes;
  nvtxDomainRangePushEx(domain(), &a);
}

void push_message(const char* message, int rank) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.category = static_cast<uint32_t>(rank);
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  nvtxDomainRangePushEx(domain(), &a);
}

void pop() { nvtxDomainRangePop(domain()); }
}  // namespace
#else
namespace {
void push_phase(Phase, uint64_t, int) {}
void push_message(const char*, int) {}
void pop() {}
}  // namespace
#endif

namespace {
// "step 1 accum/..." -> "step"; the level of the hierarchy a message names.
std::string_view first_word(std::string_view m) {
  const size_t sp = m.find(' ');
  return sp == std::string_view::npos ? std::string_view("range") : m.substr(0, sp);
}
}  // namespace

PhaseRange::PhaseRange(Phase p, uint64_t bytes, int rank, bool trace)
    : trace_(trace ? trace::current() : nullptr), bytes_(bytes), phase_(p) {
  if (trace_) begin_ = trace::Clock::now();
  push_phase(p, bytes, rank);
}

PhaseRange::~PhaseRange() {
  pop();
  if (!trace_) return;
  const auto end = trace::Clock::now();
  try {
    trace_->complete(trace::track::kPhases, phase_name(phase_), "phase", begin_, end,
                     {{"bytes", bytes_}});
  } catch (...) {
    // Out of memory building the args: the step goes on, and the trace counts the lost event.
    if (trace_->recorder) trace_->recorder->lost_event();
  }
}

ScopedRange::ScopedRange(const char* message, int rank) : trace_(trace::current()) {
  if (trace_) {
    message_ = message;
    begin_ = trace::Clock::now();
  }
  push_message(message, rank);
}

ScopedRange::~ScopedRange() {
  pop();
  if (!trace_) return;
  const auto end = trace::Clock::now();
  try {
    trace_->complete(trace::track::kPhases, message_, first_word(message_), begin_, end);
  } catch (...) {
    // As above: a lost event (counted in the trace), never a failed step.
    if (trace_->recorder) trace_->recorder->lost_event();
  }
}

}  // namespace shardaccum::nvtx
