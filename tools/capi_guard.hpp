#pragma once
// The C ABIs' one error boundary (tools/*_capi.cpp): runs a call's body and turns every exception
// into the binaries' exit codes (2 bad input, 1 failure), its message into the library's last error.
#include "common/usage.hpp"

#include <exception>
#include <string>
#include <utility>

namespace layerbench::capi {

template <class F>
int guarded(std::string& last_error, F&& body) {
  try {
    std::forward<F>(body)();
    last_error.clear();
    return kExitOk;
  } catch (const UsageError& e) {
    last_error = e.what();
    return kExitUsage;
  } catch (const std::exception& e) {
    last_error = e.what();
    return kExitFailure;
  } catch (...) {
    last_error = "unknown failure";
    return kExitFailure;
  }
}

}  // namespace layerbench::capi
