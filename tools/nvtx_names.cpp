// liblayerbench_nvtx_names: an NVTX injection library (NVTX_INJECTION64_PATH=<this .so>) that counts
// the ranges pushed and popped under each name and, at process exit, writes one table
// (name, pushes, pops, nesting ok) to the file named by LAYERBENCH_NVTX_NAMES (stderr when unset).
// It stands in for an Nsight Systems NVTX summary where nsys is absent: the names, not the times.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Count {
  long pushes = 0, pops = 0, bad_pops = 0;
};

struct Table {
  std::mutex mu;
  std::map<std::string, Count> by_name;
  std::vector<std::string> stack;  // one thread's view suffices for the layer binaries' host thread
  long unmatched_pops = 0;

  ~Table() { write(); }

  void push(const char* name) {
    std::lock_guard lock(mu);
    std::string n = name ? name : "(null)";
    ++by_name[n].pushes;
    stack.push_back(std::move(n));
  }
  void pop() {
    std::lock_guard lock(mu);
    if (stack.empty()) { ++unmatched_pops; return; }
    ++by_name[stack.back()].pops;
    stack.pop_back();
  }
  void write() {
    const char* path = std::getenv("LAYERBENCH_NVTX_NAMES");
    FILE* f = path ? std::fopen(path, "w") : stderr;
    if (!f) return;
    std::fprintf(f, "| name | pushes | pops | nesting ok |\n|---|---:|---:|---|\n");
    for (auto const& [name, c] : by_name) {
      std::fprintf(f, "| %s | %ld | %ld | %s |\n", name.c_str(), c.pushes, c.pops, c.pushes == c.pops ? "yes" : "no");
    }
    std::fprintf(f, "\nopen at exit: %zu, pops without a push: %ld\n", stack.size(), unmatched_pops);
    if (f != stderr) std::fclose(f);
  }
};

Table& table() {
  static Table t;
  return t;
}

const char* message_of(const nvtxEventAttributes_t* a) {
  if (!a) return nullptr;
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii;
  return "(non-ASCII message)";
}

int NVTX_API push_a(const char* m) { table().push(m); return 0; }
int NVTX_API push_ex(const nvtxEventAttributes_t* a) { table().push(message_of(a)); return 0; }
int NVTX_API pop() { table().pop(); return 0; }
int NVTX_API domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { table().push(message_of(a)); return 0; }
int NVTX_API domain_pop(nvtxDomainHandle_t) { table().pop(); return 0; }

template <class F>
void set(NvtxFunctionTable t, unsigned size, unsigned id, F f) {
  if (id < size && t[id]) *t[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int NVTX_API InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  auto const* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (!cb || cb->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  table();  // constructed before any hook runs: destroyed (and written) after the program's statics
  NvtxFunctionTable t = nullptr;
  unsigned size = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &size) || !t) return 0;
  set(t, size, NVTX_CBID_CORE_RangePushA, push_a);
  set(t, size, NVTX_CBID_CORE_RangePushEx, push_ex);
  set(t, size, NVTX_CBID_CORE_RangePop, pop);
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &size) && t) {
    set(t, size, NVTX_CBID_CORE2_DomainRangePushEx, domain_push_ex);
    set(t, size, NVTX_CBID_CORE2_DomainRangePop, domain_pop);
  }
  return 1;
}
