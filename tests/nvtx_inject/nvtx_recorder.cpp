// A minimal NVTX injection library for tests: load it with NVTX_INJECTION64_PATH=<this .so> and
// it records every range push/pop (domain and global) to the file named by
// SHARDACCUM_NVTX_RECORD, one line per call, tab-separated:
//   push <tid> <domain> <category> <payload|-> <message>
//   pop  <tid> <domain>
// <domain> is the name given to nvtxDomainCreateA ("-" for the global domain). This lets CI check
// the suite's NVTX hierarchy without a GPU or Nsight Systems.
//
// Protocol (nvtx3/nvtxDetail/nvtxInit.h): NVTX dlopens the library on its first call, calls
// InitializeInjectionNvtx2(getExportTable); the tool asks for the CALLBACKS export table, gets
// the CORE and CORE2 module function tables from it and writes its functions into their slots
// (indexed by NVTX_CBID_*); slots left empty become no-ops.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cwchar>
#include <mutex>
#include <string>

namespace {

std::mutex g_mu;
FILE* g_out = nullptr;

// Domains and registered strings are handed out as pointers to heap strings (never freed: NVTX
// handles live as long as the process).
struct Handle {
  std::string text;
};

const char* text_of(const void* handle, const char* fallback) {
  return handle ? static_cast<const Handle*>(handle)->text.c_str() : fallback;
}

long thread_id() { return static_cast<long>(syscall(SYS_gettid)); }

std::string message_of(const nvtxEventAttributes_t* a) {
  if (!a) return "";
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii ? a->message.ascii : "";
  case NVTX_MESSAGE_TYPE_REGISTERED: return text_of(a->message.registered, "?");
  case NVTX_MESSAGE_TYPE_UNICODE: {
    std::string s;
    for (const wchar_t* w = a->message.unicode; w && *w; ++w)
      s += static_cast<char>(*w < 128 ? *w : '?');
    return s;
  }
  default: return "";
  }
}

std::string payload_of(const nvtxEventAttributes_t* a) {
  if (!a) return "-";
  switch (a->payloadType) {
  case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: return std::to_string(a->payload.ullValue);
  case NVTX_PAYLOAD_TYPE_INT64: return std::to_string(a->payload.llValue);
  case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: return std::to_string(a->payload.uiValue);
  case NVTX_PAYLOAD_TYPE_INT32: return std::to_string(a->payload.iValue);
  case NVTX_PAYLOAD_TYPE_DOUBLE: return std::to_string(a->payload.dValue);
  case NVTX_PAYLOAD_TYPE_FLOAT: return std::to_string(a->payload.fValue);
  default: return "-";
  }
}

void write_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::fputs(line.c_str(), g_out);
  std::fputc('\n', g_out);
  std::fflush(g_out);  // the process may end without running static destructors
}

int push_line(const char* domain, const nvtxEventAttributes_t* a) {
  write_line("push\t" + std::to_string(thread_id()) + "\t" + domain + "\t" +
             std::to_string(a ? a->category : 0) + "\t" + payload_of(a) + "\t" + message_of(a));
  return 0;
}

int pop_line(const char* domain) {
  write_line("pop\t" + std::to_string(thread_id()) + "\t" + domain);
  return 0;
}

// ---- the functions NVTX calls instead of its no-ops ----
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  return reinterpret_cast<nvtxDomainHandle_t>(new Handle{name ? name : ""});
}
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t NVTX_API domain_register_string_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(new Handle{s ? s : ""});
}
int NVTX_API domain_range_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push_line(text_of(d, "-"), a);
}
int NVTX_API domain_range_pop(nvtxDomainHandle_t d) { return pop_line(text_of(d, "-")); }
int NVTX_API range_push_ex(const nvtxEventAttributes_t* a) { return push_line("-", a); }
int NVTX_API range_push_a(const char* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return push_line("-", &a);
}
int NVTX_API range_pop() { return pop_line("-"); }

template <typename F>
bool assign(NvtxFunctionTable table, unsigned size, unsigned id, F fn) {
  if (!table || id >= size || !table[id]) return false;
  *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
  return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  const char* path = std::getenv("SHARDACCUM_NVTX_RECORD");
  if (!path || !*path) {
    std::fprintf(stderr, "nvtx_recorder: SHARDACCUM_NVTX_RECORD is not set; not recording\n");
    return 0;
  }
  g_out = std::fopen(path, "w");
  if (!g_out) {
    std::fprintf(stderr, "nvtx_recorder: cannot write %s\n", path);
    return 0;
  }
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!callbacks || !callbacks->GetModuleFunctionTable) return 0;
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) ||
      !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size))
    return 0;
  bool ok =
      assign(core, core_size, NVTX_CBID_CORE_RangePushEx, range_push_ex) &&
      assign(core, core_size, NVTX_CBID_CORE_RangePushA, range_push_a) &&
      assign(core, core_size, NVTX_CBID_CORE_RangePop, range_pop) &&
      assign(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, domain_create_a) &&
      assign(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, domain_destroy) &&
      assign(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, domain_register_string_a) &&
      assign(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, domain_range_push_ex) &&
      assign(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, domain_range_pop);
  if (!ok) {
    std::fprintf(stderr, "nvtx_recorder: NVTX function table smaller than expected\n");
    return 0;
  }
  if (const auto* version =
          static_cast<const NvtxExportTableVersionInfo*>(get(NVTX_ETID_VERSIONINFO));
      version && version->SetInjectionNvtxVersion)
    version->SetInjectionNvtxVersion(NVTX_VERSION);
  return 1;
}
