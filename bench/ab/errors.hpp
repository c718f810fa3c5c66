#pragma once
// Errors that end the program with exit status 2 and a message naming the file and line.
#include <stdexcept>
#include <string>

namespace layerbench::ab {

// Bad input or usage: the message is complete ("FILE:LINE: what is wrong").
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int exit_bad_input = 2;
inline constexpr int exit_interrupted = 130;

}  // namespace layerbench::ab
