#pragma once
// Running the layerbench-ab binary from tests: exit status, stdout and stderr, studies in the
// background interrupted at a given point, and arms whose metric is fixed per pair. The CLI
// tests use the whole namespace (using namespace layerbench::ab::testing).
#include <csignal>
#include <filesystem>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <sys/types.h>
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

// The records of a study file with the given "type" ("run", "study", ...).
std::vector<nlohmann::json> records(const std::filesystem::path& path, const char* type);

// Starts layerbench-ab in the background in `dir` with stdout/stderr to bg.out / bg.err; returns its pid.
pid_t spawn_ab(const std::vector<std::string>& args, const std::filesystem::path& dir);
// Waits until the file has at least `lines` lines (or 300 s pass; then a test failure is recorded).
void wait_for_lines(const std::filesystem::path& path, std::size_t lines);
// Exit status of a child, 128 + signal when killed.
int wait_exit(pid_t pid);
// Starts `args` in the background in `dir`, sends `sig` once `study` has `lines` lines and returns
// the exit status (128 + SIGKILL for a kill).
int interrupt_after_lines(const std::vector<std::string>& args, const std::filesystem::path& dir,
                          const std::filesystem::path& study, std::size_t lines, int sig = SIGKILL);

// A command whose metric is line PAIR+1 of `values` (printed as value=X): each pair's values are
// fixed, so a study's verdict is the estimator's on known data, never the machine's timing, and a
// resumed study sees the same data as an uninterrupted one.
std::string pair_value_command(const std::filesystem::path& values);
// `n` lines of mean + spread x (a sum of four uniforms - 2), from a fixed generator.
std::string noisy_values(double mean, double spread, int n, std::uint64_t seed);

}  // namespace layerbench::ab::testing
