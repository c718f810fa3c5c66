#pragma once
// The one output-file writer of every binary. A file is written to a temporary file in the same
// directory, fsync'ed and renamed over the final path, so a reader (or a crash, or a SIGKILL in
// the middle of the write) sees the old file or the complete new one, never a partial file.
// check_output_path() runs at start-up, before any work: a directory, a missing directory, an
// uncreatable file or one path given for two outputs exit 2 at once instead of after the run.
// "-" (standard output) always passes.
#include <string>
#include <string_view>
#include <vector>

namespace layerbench {

// Throws UsageError ("--json /tmp: is a directory") when `path` cannot be written: it names a
// directory, its directory is missing or not writable, or a file cannot be created there (tried
// with a temporary file that is removed again). `flag` names the option in the message.
void check_output_path(const std::string& path, std::string_view flag);

// An output directory (created with its parents when missing) in which files can be created;
// throws UsageError when it is a file or cannot be created or written.
void check_output_dir(const std::string& dir, std::string_view flag);

// check_output_path() for each (flag, path) with a non-empty path, and no path named twice.
struct OutputPath {
  std::string_view flag;
  const std::string* path;
};
void check_output_paths(const std::vector<OutputPath>& outputs);

// Writes `text` atomically (temporary file, fsync, rename, fsync of the directory). A symlink is
// followed (its target is replaced); a device or FIFO (e.g. /dev/stdout) is written in place.
// Throws std::runtime_error naming the file and the system error on failure; the old file is
// then untouched and the temporary file removed.
void write_file_atomic(const std::string& path, std::string_view text);

}  // namespace layerbench
