#pragma once
// CUDA-backend internals shared by the device and the NCCL communicator (CUDA builds only).
#include "collectives/device.hpp"

#include <cuda_runtime.h>

#include <functional>
#include <string>

namespace layerbench::detail {

inline cudaStream_t cuda_stream(Stream s) { return static_cast<cudaStream_t>(s.handle); }

// A poll callback returns a non-empty message when its communicator failed asynchronously;
// abort() tears the communicator down so that no rank stays blocked in it.
struct CommWatch {
  std::function<std::string()> poll;
  std::function<void()> abort;
};

// Implemented by the CUDA device: every host wait polls the registered communicators and gives
// up after the timeout, so a failure on one rank never hangs the others.
class WatchedDevice {
 public:
  virtual ~WatchedDevice() = default;
  virtual int add_watch(CommWatch w) = 0;
  virtual void remove_watch(int id) = 0;
  virtual void set_timeout_s(double seconds) = 0;
};

}  // namespace layerbench::detail
