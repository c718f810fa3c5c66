// CUDA backend of Kernels: the copy kernels of layout_cuda.cu and cuDNN SDPA.
#include "attention/cudnn_sdpa.hpp"
#include "attention/kernels.hpp"
#include "attention/layout_cuda.hpp"
#include "collectives/cuda_internal.hpp"
#include "collectives/error.hpp"

namespace layerbench::attention {
namespace {

class CudaKernels final : public Kernels {
 public:
  CudaKernels(DType t, SdpaPath path) : dtype_(t), sdpa_(path) {
    if (t != DType::bf16) throw UsageError("cuDNN attention runs in bf16 only");
  }
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
  void merge_init(float* acc_o, float* acc_lse, long long n_lse, int head_dim, Stream s) override {
    detail::launch_merge_init(acc_o, acc_lse, n_lse, head_dim, layerbench::detail::cuda_stream(s));
  }
  void merge(const void* part_o, const float* part_lse, float* acc_o, float* acc_lse, const MergeShape& m,
             Stream s) override {
    detail::launch_merge(part_o, part_lse, acc_o, acc_lse, m, layerbench::detail::cuda_stream(s));
  }
  void merge_finish(const float* acc_o, void* o, long long n, Stream s) override {
    detail::launch_merge_finish(acc_o, o, n, layerbench::detail::cuda_stream(s));
  }
  void prepare(const AttentionShape& a, bool with_lse) override { sdpa_.prepare(a, with_lse); }
  std::string describe() const override { return sdpa_.describe(); }

 private:
  DType dtype_;
  CudnnSdpa sdpa_;
};

}  // namespace

std::unique_ptr<Kernels> make_cuda_kernels(DType t, const std::string& sdpa_path) {
  return std::make_unique<CudaKernels>(t, parse_sdpa_path(sdpa_path));
}

}  // namespace layerbench::attention
