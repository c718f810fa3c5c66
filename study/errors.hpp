#pragma once
// Errors that end the program with exit status 2 and a message naming the file and line: the
// project's one usage-error type and exit codes (common/usage.hpp) under the names ab uses.
#include "common/usage.hpp"

namespace layerbench::ab {

// Bad input or usage: the message is complete ("FILE:LINE: what is wrong").
using InputError = layerbench::UsageError;

inline constexpr int exit_bad_input = kExitUsage;
inline constexpr int exit_interrupted = kExitInterrupted;

}  // namespace layerbench::ab
