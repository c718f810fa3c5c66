#include "attention/cudnn_sdpa.hpp"

#include "collectives/error.hpp"

#include <cudnn.h>
#include <fmt/format.h>

#include <array>
#include <map>
#include <cstdint>
#include <vector>

namespace layerbench::attention {
namespace {

using Desc = cudnnBackendDescriptor_t;
constexpr long long kUnifiedMinVersion = 91301;  // 9.13.1: first release with the SDPA_FWD op

// Owns every descriptor of a graph; destroyed in reverse creation order.
struct DescPool {
  std::vector<Desc> all;
  Desc make(cudnnBackendDescriptorType_t t) {
    Desc d = nullptr;
    LB_CUDNN_CHECK(cudnnBackendCreateDescriptor(t, &d));
    all.push_back(d);
    return d;
  }
  ~DescPool() {
    for (auto it = all.rbegin(); it != all.rend(); ++it) cudnnBackendDestroyDescriptor(*it);
  }
};

void set(Desc d, cudnnBackendAttributeName_t n, cudnnBackendAttributeType_t t, int64_t count,
         const void* v) {
  LB_CUDNN_CHECK(cudnnBackendSetAttribute(d, n, t, count, v));
}
void set_desc(Desc d, cudnnBackendAttributeName_t n, Desc v) {
  set(d, n, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

// Logical dims [B, H, S, D] (or [B, H, Sq, Skv] for scores); strides carry the layout.
Desc tensor(DescPool& pool, int64_t uid, cudnnDataType_t dt, std::array<int64_t, 4> dims,
            std::array<int64_t, 4> strides, bool is_virtual = false, bool by_value = false) {
  Desc d = pool.make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t align = 16;
  set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
  set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
  set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
  set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
  set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  if (by_value) set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  LB_CUDNN_CHECK(cudnnBackendFinalize(d));
  return d;
}

std::array<int64_t, 4> packed(std::array<int64_t, 4> dims) {
  return {dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
}

enum Uid : int64_t { kQ = 1, kK, kV, kO, kScale, kStats, kVirtual = 100 };

Desc pointwise(DescPool& pool, cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y) {
  Desc pw = pool.make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
  LB_CUDNN_CHECK(cudnnBackendFinalize(pw));
  Desc op = pool.make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  LB_CUDNN_CHECK(cudnnBackendFinalize(op));
  return op;
}

Desc matmul(DescPool& pool, Desc a, Desc b, Desc c) {
  Desc mm = pool.make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  LB_CUDNN_CHECK(cudnnBackendFinalize(mm));
  Desc op = pool.make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  LB_CUDNN_CHECK(cudnnBackendFinalize(op));
  return op;
}

Desc reduction(DescPool& pool, cudnnReduceTensorOp_t which, Desc x, Desc y) {
  Desc red = pool.make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  set(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &which);
  set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
  LB_CUDNN_CHECK(cudnnBackendFinalize(red));
  Desc op = pool.make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
  LB_CUDNN_CHECK(cudnnBackendFinalize(op));
  return op;
}

}  // namespace

SdpaPath parse_sdpa_path(const std::string& s) {
  if (s == "auto") return SdpaPath::automatic;
  if (s == "unified") return SdpaPath::unified;
  if (s == "composite") return SdpaPath::composite;
  throw UsageError(fmt::format("--sdpa '{}': expected auto, unified or composite", s));
}

struct CudnnSdpa::Plan {
  DescPool pool;
  Desc plan = nullptr;
  void* workspace = nullptr;
  void* stats = nullptr;  // composite only: fp32 [B, H, Sq, 1], written and not read
  int64_t workspace_bytes = 0;
  float scale = 1.0f;  // the variant packs hold a host pointer to it (by-value scalar)
  std::string info;
  // Variant packs by their data pointers: a timed loop reuses its buffers, so the descriptor is
  // built once instead of per call (its create / finalize / destroy is host time before launch).
  std::map<std::array<void*, 6>, Desc> packs;
  DescPool pack_pool;
  ~Plan() {
    if (workspace) cudaFree(workspace);
    if (stats) cudaFree(stats);
  }
};

long long CudnnSdpa::runtime_version() { return static_cast<long long>(cudnnGetVersion()); }

CudnnSdpa::CudnnSdpa(SdpaPath path) : path_(path) {
  cudnnHandle_t h = nullptr;
  LB_CUDNN_CHECK(cudnnCreate(&h));
  handle_ = h;
  if (path_ == SdpaPath::automatic)
    path_ = runtime_version() >= kUnifiedMinVersion ? SdpaPath::unified : SdpaPath::composite;
#if CUDNN_VERSION < 91301
  if (path_ == SdpaPath::unified)
    throw UsageError("this build's cuDNN headers predate the unified SDPA op (9.13.1)");
#endif
  if (path_ == SdpaPath::unified && runtime_version() < kUnifiedMinVersion)
    throw UsageError(fmt::format("cuDNN {} has no unified SDPA op (needs 9.13.1)", runtime_version()));
}

CudnnSdpa::~CudnnSdpa() {
  plans_.clear();
  if (handle_) cudnnDestroy(static_cast<cudnnHandle_t>(handle_));
}

CudnnSdpa::Plan& CudnnSdpa::plan_for(const AttentionShape& a, bool with_stats) {
  const Key key{a.batch, a.seq_q, a.seq_kv, a.heads, a.head_dim, a.scale, a.kv(), a.q_stride(), a.kv_stride(), with_stats};
  if (auto it = plans_.find(key); it != plans_.end()) return *it->second;

  auto plan = std::make_unique<Plan>();
  DescPool& pool = plan->pool;
  const int64_t B = a.batch, H = a.heads, Hk = a.kv(), Sq = a.seq_q, Skv = a.seq_kv, D = a.head_dim;
  // Sequence-major memory [S, B, H, D] as logical [B, H, S, D]: stride_b = H*D, stride_h = D,
  // stride_s = the row stride (B*H*D packed; larger for one request of a batch), D contiguous.
  const std::array<int64_t, 4> q_dims{B, H, Sq, D}, kv_dims{B, Hk, Skv, D};
  const std::array<int64_t, 4> q_str{H * D, D, a.q_stride(), 1}, kv_str{Hk * D, D, a.kv_stride(), 1};
  if (Hk != H && path_ != SdpaPath::unified)
    throw UsageError("GQA (--kv-heads below --heads) needs cuDNN's unified SDPA op (>= 9.13.1)");
  Desc q = tensor(pool, kQ, CUDNN_DATA_BFLOAT16, q_dims, q_str);
  Desc v = tensor(pool, kV, CUDNN_DATA_BFLOAT16, kv_dims, kv_str);
  Desc o = tensor(pool, kO, CUDNN_DATA_BFLOAT16, q_dims, q_str);
  Desc scale = tensor(pool, kScale, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  std::vector<Desc> ops;
  std::string form;
  if (path_ == SdpaPath::unified) {
#if CUDNN_VERSION >= 91301
    Desc k = tensor(pool, kK, CUDNN_DATA_BFLOAT16, kv_dims, kv_str);
    Desc op = pool.make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, q);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, k);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, v);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, o);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, scale);
    if (with_stats) {  // natural-log LSE of the scaled scores, fp32 [B, H, Sq, 1]
      const std::array<int64_t, 4> m_dims{B, H, Sq, 1};
      set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC,
               tensor(pool, kStats, CUDNN_DATA_FLOAT, m_dims, packed(m_dims)));
    }
    LB_CUDNN_CHECK(cudnnBackendFinalize(op));
    ops.push_back(op);
    form = "unified sdpa_fwd";
#endif
  } else {
    // K^T: the K buffer seen as [B, H, D, Skv] (last two strides swapped).
    Desc kt = tensor(pool, kK, CUDNN_DATA_BFLOAT16, {B, H, D, Skv}, {H * D, D, 1, a.kv_stride()});
    const std::array<int64_t, 4> s_dims{B, H, Sq, Skv}, m_dims{B, H, Sq, 1};
    int64_t uid = kVirtual;
    auto virt = [&](std::array<int64_t, 4> dims, cudnnDataType_t dt = CUDNN_DATA_FLOAT) {
      return tensor(pool, uid++, dt, dims, packed(dims), true);
    };
    Desc s = virt(s_dims), s_scaled = virt(s_dims), m = virt(m_dims), centred = virt(s_dims),
         e = virt(s_dims), z = virt(m_dims);
    Desc p = virt(s_dims, CUDNN_DATA_BFLOAT16);  // P carries the I/O type, as the frontend sets it
    // The runtime-fusion engine recognises the training pattern, which writes the softmax
    // statistics (LSE = M + log Z) to a real tensor; without it heuristics return no config.
    Desc log_z = virt(m_dims);
    Desc stats = tensor(pool, kStats, CUDNN_DATA_FLOAT, m_dims, packed(m_dims));
    LB_CUDA_CHECK(cudaMalloc(&plan->stats, static_cast<std::size_t>(B * H * Sq) * sizeof(float)));
    ops.push_back(matmul(pool, q, kt, s));
    ops.push_back(pointwise(pool, CUDNN_POINTWISE_MUL, s, scale, s_scaled));
    ops.push_back(reduction(pool, CUDNN_REDUCE_TENSOR_MAX, s_scaled, m));
    ops.push_back(pointwise(pool, CUDNN_POINTWISE_SUB, s_scaled, m, centred));
    ops.push_back(pointwise(pool, CUDNN_POINTWISE_EXP, centred, nullptr, e));
    ops.push_back(reduction(pool, CUDNN_REDUCE_TENSOR_ADD, e, z));
    ops.push_back(pointwise(pool, CUDNN_POINTWISE_LOG, z, nullptr, log_z));
    ops.push_back(pointwise(pool, CUDNN_POINTWISE_ADD, m, log_z, stats));
    ops.push_back(pointwise(pool, CUDNN_POINTWISE_DIV, e, z, p));
    ops.push_back(matmul(pool, p, v, o));
    form = "composite sdpa graph";
  }
  LB_CHECK(!ops.empty(), "no SDPA graph form available");

  cudnnHandle_t handle = static_cast<cudnnHandle_t>(handle_);
  Desc graph = pool.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      static_cast<int64_t>(ops.size()), ops.data());
  LB_CUDNN_CHECK(cudnnBackendFinalize(graph));

  Desc heur = pool.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  LB_CUDNN_CHECK(cudnnBackendFinalize(heur));
  int64_t count = 0;
  LB_CUDNN_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
  if (count == 0) {  // nothing from mode A: ask the fallback list before giving up
    heur = pool.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    const cudnnBackendHeurMode_t fallback = CUDNN_HEUR_MODE_FALLBACK;
    set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
    set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &fallback);
    LB_CUDNN_CHECK(cudnnBackendFinalize(heur));
    LB_CUDNN_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    form += " (fallback heuristics)";
  }
  std::vector<Desc> cfgs;
  for (int64_t i = 0; i < count; ++i) cfgs.push_back(pool.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR));
  int64_t got = 0;
  if (count > 0)
    LB_CUDNN_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                            CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, cfgs.data()));
  // The first config that finalizes: heuristics rank the Hopper kernel first.
  for (int64_t i = 0; i < got && !plan->plan; ++i) {
    Desc ep = nullptr;
    LB_CUDNN_CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &ep));
    set(ep, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
    set_desc(ep, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfgs[static_cast<std::size_t>(i)]);
    if (cudnnBackendFinalize(ep) != CUDNN_STATUS_SUCCESS) {
      cudnnBackendDestroyDescriptor(ep);
      continue;
    }
    pool.all.push_back(ep);
    plan->plan = ep;
    int64_t engine_index = -1;
    Desc engine = pool.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    int64_t n = 0;
    if (cudnnBackendGetAttribute(cfgs[static_cast<std::size_t>(i)], CUDNN_ATTR_ENGINECFG_ENGINE,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &engine) == CUDNN_STATUS_SUCCESS)
      cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                               &engine_index);
    LB_CUDNN_CHECK(cudnnBackendGetAttribute(ep, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                            CUDNN_TYPE_INT64, 1, &n, &plan->workspace_bytes));
    const long long ver = runtime_version();
    plan->info = fmt::format("cudnn {}.{}.{} {} engine {} (config {} of {}){}", ver / 10000,
                             (ver / 100) % 100, ver % 100, form, engine_index, i + 1, got,
                             with_stats ? " with stats" : "");
  }
  if (!plan->plan)
    throw Error(fmt::format("cuDNN {}: none of {} heuristic configs finalizes for B={} H={} Sq={} "
                            "Skv={} D={}",
                            form, got, B, H, Sq, Skv, D));
  // Allocated and passed even when tiny (256 B was seen): the engine may require a pointer.
  LB_CUDA_CHECK(cudaMalloc(&plan->workspace, static_cast<std::size_t>(std::max<int64_t>(plan->workspace_bytes, 256))));
  auto& ref = *plan;
  plans_.emplace(key, std::move(plan));
  return ref;
}

void CudnnSdpa::prepare(const AttentionShape& a, bool with_stats) { described_ = plan_for(a, with_stats).info; }

void CudnnSdpa::run(const void* q, const void* k, const void* v, void* o, const AttentionShape& a,
                    cudaStream_t s, float* lse) {
  Plan& plan = plan_for(a, lse != nullptr);
  described_ = plan.info;
  plan.scale = a.scale;  // by value: the variant pack holds a host pointer (the plan's key includes it)
  int64_t uids[6] = {kQ, kK, kV, kO, kScale, kStats};
  void* ptrs[6] = {const_cast<void*>(q), const_cast<void*>(k), const_cast<void*>(v), o, &plan.scale,
                   lse ? static_cast<void*>(lse) : plan.stats};
  const int64_t n = (plan.stats || lse) ? 6 : 5;
  const std::array<void*, 6> key{ptrs[0], ptrs[1], ptrs[2], ptrs[3], ptrs[5], nullptr};
  Desc pack = nullptr;
  if (auto it = plan.packs.find(key); it != plan.packs.end()) {
    pack = it->second;
  } else {
    if (plan.packs.size() >= 256) {  // bounded: buffers that keep changing get fresh packs
      plan.packs.clear();
      for (Desc d : plan.pack_pool.all) cudnnBackendDestroyDescriptor(d);
      plan.pack_pool.all.clear();
    }
    pack = plan.pack_pool.make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids);
    set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs);
    set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &plan.workspace);
    LB_CUDNN_CHECK(cudnnBackendFinalize(pack));
    plan.packs.emplace(key, pack);
  }
  cudnnHandle_t handle = static_cast<cudnnHandle_t>(handle_);
  LB_CUDNN_CHECK(cudnnSetStream(handle, s));
  LB_CUDNN_CHECK(cudnnBackendExecute(handle, plan.plan, pack));
}

}  // namespace layerbench::attention
