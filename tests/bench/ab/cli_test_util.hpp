#pragma once
// Running the layerbench-ab binary from tests: exit status, stdout and stderr.
#include <filesystem>
#include <string>
#include <vector>

namespace layerbench::ab::testing {

struct CliResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs layerbench-ab with `args` (each passed as one argument, no shell) in `cwd`.
CliResult run_ab(const std::vector<std::string>& args, const std::filesystem::path& cwd = {});

// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path file(const std::string& name, const std::string& content) const;

 private:
  std::filesystem::path path_;
};

std::string read_text(const std::filesystem::path& path);
std::vector<std::string> read_lines(const std::filesystem::path& path);

}  // namespace layerbench::ab::testing
