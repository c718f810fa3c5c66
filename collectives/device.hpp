#pragma once
// Memory, streams and timers behind one abstraction, so benchmark code does not care whether it
// runs on the host backend (plain memory, synchronous "streams", steady_clock) or the CUDA
// backend (device memory, CUDA streams, CUDA events).
#include "collectives/types.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace layerbench {

// An opaque stream: cudaStream_t on the CUDA backend, nullptr (synchronous) on the host.
struct Stream {
  void* handle = nullptr;
};

// A move-only allocation in the backend's memory space.
class Buffer {
 public:
  Buffer() = default;
  Buffer(void* ptr, std::size_t bytes, std::function<void(void*)> release)
      : ptr_(ptr), bytes_(bytes), release_(std::move(release)) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    Buffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~Buffer() {
    if (ptr_ && release_) release_(ptr_);
  }

  void* data() const { return ptr_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(release_, o.release_);
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  std::function<void(void*)> release_;
};

// Times a region of a stream. CUDA backend: a pair of events (elapsed GPU time);
// host backend: steady_clock at start()/stop() (the work is synchronous).
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void start(Stream s) = 0;
  virtual void stop(Stream s) = 0;
  // Waits for the stop mark if needed; milliseconds between start and stop.
  virtual double elapsed_ms() = 0;
  // The same in nanoseconds (exact on the host backend, the events' resolution on CUDA).
  virtual std::int64_t elapsed_ns() = 0;
  // Nanoseconds from `origin`'s start mark to this timer's start mark: both made by the same
  // device, both stopped and elapsed_ms() read (the trace places marks on one time line).
  virtual std::int64_t start_since_ns(Timer& origin) = 0;
  // The start mark on the host's steady clock (collectives/trace.hpp steady_ns) where the mark is
  // a host reading (host backend); -1 where it is a device mark (CUDA events).
  virtual std::int64_t start_steady_ns() const { return -1; }
};

// An event that one stream records and another waits on (the async-handle building block).
class Event {
 public:
  virtual ~Event() = default;
  virtual void record(Stream s) = 0;
  virtual void wait(Stream s) = 0;  // make `s` wait for the recorded point (no host block)
  virtual void synchronize() = 0;   // block the host until the recorded point
};

// A captured sequence of stream work replayed as one launch (a CUDA graph; on the host backend
// the body itself is replayed).
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void launch(Stream s) = 0;
};

class CollectiveObserver;  // collectives/trace.hpp

class Device {
 public:
  virtual ~Device() = default;
  virtual Backend backend() const = 0;
  virtual std::string name() const = 0;  // e.g. "NVIDIA H200" or the CPU model
  virtual int ordinal() const = 0;       // GPU index on the node (-1 on the host backend)

  virtual Buffer alloc(std::size_t bytes) = 0;
  // Memory for collective buffers from the communication library's own allocator (NCCL's
  // ncclMemAlloc: cuMem-backed, eligible for buffer registration, what nccl-tests >= 2.19 uses);
  // plain alloc() on the host backend.
  virtual Buffer alloc_comm(std::size_t bytes) { return alloc(bytes); }
  virtual void copy_to_host(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  virtual void copy_from_host(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  virtual void copy(void* dst, const void* src, std::size_t bytes, Stream s) = 0;
  virtual void memset(void* dst, int value, std::size_t bytes, Stream s) = 0;

  virtual Stream compute_stream() = 0;  // where components enqueue work
  virtual Stream comm_stream() = 0;     // where async collectives run, so compute can overlap
  virtual void synchronize(Stream s) = 0;
  virtual void synchronize_all() = 0;

  // Makes `s` wait `microseconds` of wall time: a one-thread spin kernel on the CUDA backend
  // (capturable in a graph), a host busy-wait on the host backend (synchronous streams).
  virtual void spin(Stream s, double microseconds) = 0;
  // PCI bus id of the GPU ("0000:19:00.0"); empty on the host backend.
  virtual std::string pci_bus_id() const { return {}; }

  virtual std::unique_ptr<Timer> make_timer() = 0;
  virtual std::unique_ptr<Event> make_event() = 0;
  // Captures what `body` enqueues on `s` (collectives included) into a replayable graph.
  virtual std::unique_ptr<Graph> capture(Stream s, const std::function<void(Stream)>& body) = 0;

  // Named ranges for external profilers (NVTX on the CUDA backend, so Nsight Systems shows the
  // harness's component names; nothing on the host backend). Off until set_ranges(true).
  virtual void range_begin(const char* /*name*/) {}
  virtual void range_end() {}
  void set_ranges(bool on) { ranges_ = on; }
  bool ranges() const { return ranges_; }

  // Every communicator on this device reports its collectives here while set (the trace
  // recorder); nullptr: none observed.
  void set_collective_observer(CollectiveObserver* o) { observer_ = o; }
  CollectiveObserver* collective_observer() const { return observer_; }

  // Convenience: typed host <-> backend copies that synchronise the compute stream.
  template <class T>
  std::vector<T> download(const void* src, std::size_t count) {
    std::vector<T> out(count);
    copy_to_host(out.data(), src, count * sizeof(T), compute_stream());
    synchronize(compute_stream());
    return out;
  }
  template <class T>
  Buffer upload(const std::vector<T>& v) {
    Buffer b = alloc(v.size() * sizeof(T));
    copy_from_host(b.data(), v.data(), v.size() * sizeof(T), compute_stream());
    synchronize(compute_stream());
    return b;
  }

 private:
  CollectiveObserver* observer_ = nullptr;
  bool ranges_ = false;
};

// Host backend device: aligned host memory, synchronous work.
std::unique_ptr<Device> make_host_device();
// CUDA backend device: selects GPU `local_rank % device_count` (throws without CUDA support).
std::unique_ptr<Device> make_cuda_device(int local_rank);
// A host wait longer than this ends the job: MPI calls on every backend (collectives/watchdog.hpp,
// naming the rank that holds the job up) and device waits on the CUDA backend (which abort NCCL).
void set_wait_timeout(Device& dev, double seconds);
// Number of visible CUDA devices (0 when built without CUDA or no driver).
int cuda_device_count();

}  // namespace layerbench
