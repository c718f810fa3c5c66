// CUDA backend of Kernels: the copy kernels of layout_cuda.cu and cuDNN SDPA.
#include "attention/cudnn_sdpa.hpp"
#include "attention/kernels.hpp"
#include "attention/layout_cuda.hpp"
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"

#include <algorithm>
#include <map>
#include <vector>

namespace layerbench::attention {
namespace {

class CudaKernels final : public Kernels {
 public:
  CudaKernels(DType t, SdpaPath path) : dtype_(t), sdpa_(path) {
    if (t != DType::bf16) throw UsageError("cuDNN attention runs in bf16 only");
  }
  ~CudaKernels() override {
    for (auto& [key, d] : tables_) cudaFree(d);
  }
  CudaKernels(const CudaKernels&) = delete;
  CudaKernels& operator=(const CudaKernels&) = delete;
  void pack_heads(const void* x, void* dst, const SliceShape& p, int first, int n,
                  Stream s) override {
    detail::launch_pack_heads(x, dst, p, first, n, dtype_size(dtype_), layerbench::detail::cuda_stream(s));
  }
  void unpack_heads(const void* src, void* out, const SliceShape& p, int n, Stream s) override {
    detail::launch_unpack_heads(src, out, p, n, dtype_size(dtype_), layerbench::detail::cuda_stream(s));
  }
  void attention(const void* q, const void* k, const void* v, void* o, const AttentionShape& a,
                 Stream s, float* lse) override {
    sdpa_.run(q, k, v, o, a, layerbench::detail::cuda_stream(s), lse);
  }
  void merge(const void* parts, const float* lse, const std::vector<Partial>& partials, void* o, const MergeShape& m,
             Stream s) override {
    const cudaStream_t cs = layerbench::detail::cuda_stream(s);
    detail::launch_merge(parts, lse, table_for(partials, cs), static_cast<int>(partials.size()), o, m, cs);
  }
  void prepare(const AttentionShape& a, bool with_lse) override { sdpa_.prepare(a, with_lse); }
  std::string describe() const override { return sdpa_.describe(); }

 private:
  // The merge's partial lists in device memory, uploaded on first use (a plan's list is the same
  // every forward, so a timed forward only looks it up). Few plans per process: never evicted.
  const Partial* table_for(const std::vector<Partial>& partials, cudaStream_t s) {
    auto it = tables_.find(partials);
    if (it == tables_.end()) {
      void* d = nullptr;
      const std::size_t bytes = std::max<std::size_t>(partials.size(), 1) * sizeof(Partial);
      LB_CUDA_CHECK(cudaMalloc(&d, bytes));
      it = tables_.emplace(partials, d).first;
      // From the map's own copy, which outlives the transfer.
      LB_CUDA_CHECK(cudaMemcpyAsync(d, it->first.data(), partials.size() * sizeof(Partial), cudaMemcpyHostToDevice, s));
    }
    return static_cast<const Partial*>(it->second);
  }

  DType dtype_;
  CudnnSdpa sdpa_;
  std::map<std::vector<Partial>, void*> tables_;

};

}  // namespace

std::unique_ptr<Kernels> make_cuda_kernels(DType t, const std::string& sdpa_path) {
  return std::make_unique<CudaKernels>(t, parse_sdpa_path(sdpa_path));
}

}  // namespace layerbench::attention
