// Host side of the Hopper building blocks (moe/hopper/sm90.cuh).
#include "collectives/error.hpp"
#include "moe/hopper/sm90.cuh"

#include <string>

namespace layerbench::moe::cuda::sm90 {

// cuTensorMapEncodeTiled through the runtime's driver entry point (no link against libcuda,
// so binaries still start on machines without a driver).
namespace {
CUtensorMap encode_map(const void* base, std::uint64_t inner, std::uint64_t outer, std::uint32_t box_inner,
                   std::uint32_t box_outer, CUtensorMapDataType type, std::uint64_t elem_bytes) {
  static PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult q{};
    LB_CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q));
    LB_CHECK(fn != nullptr && q == cudaDriverEntryPointSuccess, "cuTensorMapEncodeTiled is not available");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  CUtensorMap m{};
  const cuuint64_t dims[2] = {inner, outer};
  const cuuint64_t strides[1] = {inner * elem_bytes};  // bytes between rows
  const cuuint32_t box[2] = {box_inner, box_outer};
  const cuuint32_t estr[2] = {1, 1};
  const CUresult r = encode(&m, type, 2, const_cast<void*>(base), dims, strides, box, estr,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  LB_CHECK(r == CUDA_SUCCESS, "cuTensorMapEncodeTiled failed (error " + std::to_string(static_cast<int>(r)) + ")");
  return m;
}
}  // namespace

CUtensorMap encode_tma_2d(const void* base, std::uint64_t inner, std::uint64_t outer, std::uint32_t box_inner,
                          std::uint32_t box_outer) {
  return encode_map(base, inner, outer, box_inner, box_outer, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2);
}

CUtensorMap encode_tma_2d_u8(const void* base, std::uint64_t inner, std::uint64_t outer, std::uint32_t box_inner,
                             std::uint32_t box_outer) {
  return encode_map(base, inner, outer, box_inner, box_outer, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1);
}

bool device_is_sm90() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
    return false;
  return major == 9 && minor == 0;
}

int current_device_sms(int& dev) {
  int sms = 0;
  LB_CUDA_CHECK(cudaGetDevice(&dev));
  LB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

}  // namespace layerbench::moe::cuda::sm90
