#pragma once
// The one usage-error type and the one exit-code convention of every layerbench binary.
//   0: success; 1: a runtime failure (or, for the gate, a regression); 2: bad input or usage.
// Bad input is reported with one message that names the flag or the file (and line) at fault.
#include <stdexcept>

namespace layerbench {

// Bad user input or usage: the message is complete ("--pairs -3: must be a whole number >= 1",
// "FILE:LINE: what is wrong"); every binary turns it into exit code kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as a shell reports Ctrl-C

}  // namespace layerbench
