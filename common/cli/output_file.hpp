#pragma once
// Writing an output file so that a reader never sees half of it, through the one writer
// (common/output_file.hpp: a temporary file beside the target, fsync, one rename). A run killed
// mid-write leaves the previous complete version. "-" writes to standard output.
#include <string>

namespace layerbench::cli {

// Throws std::runtime_error naming the path when it cannot be written.
void write_output(const std::string& path, const std::string& text);

}  // namespace layerbench::cli
