// CUDA backend device: device memory, two streams (compute, comm), CUDA-event timers, and host
// waits that poll NCCL for asynchronous errors with a timeout.
#include "collectives/cuda_internal.hpp"
#include "collectives/spin_cuda.hpp"
#include "collectives/error.hpp"
#include "collectives/watchdog.hpp"

#include <fmt/format.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

namespace layerbench {
namespace {
using detail::cuda_stream;

class CudaDevice;

// Blocks the host until `ready()` while polling the watches (NCCL async errors) and the timeout.
void watched_wait(CudaDevice& dev, const std::function<cudaError_t()>& query, const char* what);

class CudaTimer final : public Timer {
 public:
  explicit CudaTimer(CudaDevice& dev) : dev_(dev) {
    LB_CUDA_CHECK(cudaEventCreate(&start_));
    LB_CUDA_CHECK(cudaEventCreate(&stop_));
  }
  ~CudaTimer() override {
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
  }
  void start(Stream s) override { LB_CUDA_CHECK(cudaEventRecord(start_, cuda_stream(s))); }
  void stop(Stream s) override { LB_CUDA_CHECK(cudaEventRecord(stop_, cuda_stream(s))); }
  double elapsed_ms() override {
    watched_wait(dev_, [this] { return cudaEventQuery(stop_); }, "timer stop event");
    float ms = 0;
    LB_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    return ms;
  }
  std::int64_t elapsed_ns() override { return std::llround(static_cast<double>(elapsed_ms()) * 1e6); }
  std::int64_t start_since_ns(Timer& origin) override {
    float ms = 0;
    LB_CUDA_CHECK(cudaEventElapsedTime(&ms, dynamic_cast<CudaTimer&>(origin).start_, start_));
    return std::llround(static_cast<double>(ms) * 1e6);
  }

 private:
  CudaDevice& dev_;
  cudaEvent_t start_{}, stop_{};
};

class CudaEvent final : public Event {
 public:
  explicit CudaEvent(CudaDevice& dev) : dev_(dev) {
    LB_CUDA_CHECK(cudaEventCreateWithFlags(&ev_, cudaEventDisableTiming));
  }
  ~CudaEvent() override { cudaEventDestroy(ev_); }
  void record(Stream s) override { LB_CUDA_CHECK(cudaEventRecord(ev_, cuda_stream(s))); }
  void wait(Stream s) override { LB_CUDA_CHECK(cudaStreamWaitEvent(cuda_stream(s), ev_, 0)); }
  void synchronize() override {
    watched_wait(dev_, [this] { return cudaEventQuery(ev_); }, "event");
  }

 private:
  CudaDevice& dev_;
  cudaEvent_t ev_{};
};

class CudaGraph final : public Graph {
 public:
  explicit CudaGraph(cudaGraph_t g) : graph_(g) { LB_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0)); }
  ~CudaGraph() override {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  void launch(Stream s) override { LB_CUDA_CHECK(cudaGraphLaunch(exec_, cuda_stream(s))); }

 private:
  cudaGraph_t graph_{};
  cudaGraphExec_t exec_{};
};

class CudaDevice final : public Device, public detail::WatchedDevice {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
    LB_CUDA_CHECK(cudaSetDevice(ordinal_));
    LB_CUDA_CHECK(cudaStreamCreateWithFlags(&compute_, cudaStreamNonBlocking));
    LB_CUDA_CHECK(cudaStreamCreateWithFlags(&comm_, cudaStreamNonBlocking));
    cudaDeviceProp prop{};
    LB_CUDA_CHECK(cudaGetDeviceProperties(&prop, ordinal_));
    name_ = prop.name;
  }
  ~CudaDevice() override {
    cudaStreamDestroy(compute_);
    cudaStreamDestroy(comm_);
  }

  Backend backend() const override { return Backend::cuda; }
  std::string name() const override { return name_; }
  int ordinal() const override { return ordinal_; }
  void spin(Stream s, double microseconds) override { LB_CUDA_CHECK(cuda::launch_spin(cuda_stream(s), microseconds)); }
  std::string pci_bus_id() const override {
    char id[32] = {0};
    return cudaDeviceGetPCIBusId(id, sizeof id, ordinal_) == cudaSuccess ? std::string(id) : std::string();
  }

  Buffer alloc(std::size_t bytes) override {
    void* p = nullptr;
    LB_CUDA_CHECK(cudaMalloc(&p, bytes == 0 ? 256 : bytes));
    return Buffer(p, bytes, [](void* q) { cudaFree(q); });
  }
  Buffer alloc_comm(std::size_t bytes) override {
    void* p = nullptr;
    LB_NCCL_CHECK(ncclMemAlloc(&p, bytes == 0 ? 256 : bytes));
    return Buffer(p, bytes, [](void* q) { ncclMemFree(q); });
  }
  void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) override {
    LB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, cuda_stream(s)));
  }
  void copy_from_host(void* dst, const void* src, std::size_t bytes, Stream s) override {
    LB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cuda_stream(s)));
  }
  void copy(void* dst, const void* src, std::size_t bytes, Stream s) override {
    LB_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cuda_stream(s)));
  }
  void memset(void* dst, int value, std::size_t bytes, Stream s) override {
    LB_CUDA_CHECK(cudaMemsetAsync(dst, value, bytes, cuda_stream(s)));
  }
  Stream compute_stream() override { return {compute_}; }
  Stream comm_stream() override { return {comm_}; }
  void synchronize(Stream s) override {
    watched_wait(*this, [s] { return cudaStreamQuery(cuda_stream(s)); }, "stream");
  }
  void synchronize_all() override {
    synchronize(compute_stream());
    synchronize(comm_stream());
  }
  std::unique_ptr<Timer> make_timer() override { return std::make_unique<CudaTimer>(*this); }
  std::unique_ptr<Event> make_event() override { return std::make_unique<CudaEvent>(*this); }
  void range_begin(const char* name) override {
    if (ranges()) nvtxRangePushA(name);
  }
  void range_end() override {
    if (ranges()) nvtxRangePop();
  }
  std::unique_ptr<Graph> capture(Stream s, const std::function<void(Stream)>& body) override {
    synchronize(s);
    LB_CUDA_CHECK(cudaStreamBeginCapture(cuda_stream(s), cudaStreamCaptureModeThreadLocal));
    try {
      body(s);
    } catch (...) {
      cudaGraph_t broken{};
      cudaStreamEndCapture(cuda_stream(s), &broken);
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    cudaGraph_t g{};
    LB_CUDA_CHECK(cudaStreamEndCapture(cuda_stream(s), &g));
    return std::make_unique<CudaGraph>(g);
  }

  int add_watch(detail::CommWatch w) override {
    std::lock_guard lk(mu_);
    watches_.emplace(next_id_, std::move(w));
    return next_id_++;
  }
  void remove_watch(int id) override {
    std::lock_guard lk(mu_);
    watches_.erase(id);
  }
  // First failure message among the watched communicators ("" when all are healthy).
  std::string poll_watches() {
    std::lock_guard lk(mu_);
    for (auto& [id, w] : watches_) {
      if (auto msg = w.poll(); !msg.empty()) return msg;
    }
    return {};
  }
  void abort_watches() {
    std::lock_guard lk(mu_);
    for (auto& [id, w] : watches_) w.abort();
  }
  double timeout_s() const { return timeout_s_; }
  void set_timeout_s(double t) override { timeout_s_ = t; }

 private:
  int ordinal_;
  std::string name_;
  cudaStream_t compute_{}, comm_{};
  std::mutex mu_;
  std::map<int, detail::CommWatch> watches_;
  int next_id_ = 0;
  double timeout_s_ = 300.0;
};

void watched_wait(CudaDevice& dev, const std::function<cudaError_t()>& query, const char* what) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  // Spin for the first 2 ms: a sleep granularity of tens of microseconds would be charged to
  // every host-clock measurement that ends in a wait (nccl-tests spins too). Then back off.
  constexpr double kSpinS = 2e-3;
  for (std::uint64_t polls = 0;; ++polls) {
    const cudaError_t rc = query();
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) LB_CUDA_CHECK(rc);
    const double waited = std::chrono::duration<double>(clock::now() - t0).count();
    if (waited < kSpinS && polls % 64 != 0) continue;  // NCCL's error poll is not free
    if (auto msg = dev.poll_watches(); !msg.empty()) {
      dev.abort_watches();
      throw Error(fmt::format("[{}] NCCL asynchronous error while waiting for {}: {}", rank_tag(), what, msg));
    }
    if (waited > dev.timeout_s()) {
      dev.abort_watches();
      throw Error(fmt::format("[{}] timed out after {:.0f} s waiting for {} (a peer rank failed or hung?)",
                              rank_tag(), waited, what));
    }
    if (waited >= kSpinS) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

void set_wait_timeout(Device& dev, double seconds) {
  watchdog::set_timeout(seconds);  // MPI waits (control plane) on every backend
  if (auto* w = dynamic_cast<detail::WatchedDevice*>(&dev)) w->set_timeout_s(seconds);
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::unique_ptr<Device> make_cuda_device(int local_rank) {
  const int n = cuda_device_count();
  if (n == 0) throw UsageError("backend 'cuda' requested but no CUDA device is visible");
  return std::make_unique<CudaDevice>(local_rank % n);
}

}  // namespace layerbench
