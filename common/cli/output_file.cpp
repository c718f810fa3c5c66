#include "common/cli/output_file.hpp"

#include "common/output_file.hpp"

#include <cstdio>

namespace layerbench::cli {

void write_output(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  write_file_atomic(path, text);  // the one writer: temporary file, fsync, rename
}

}  // namespace layerbench::cli
