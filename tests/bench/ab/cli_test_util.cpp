#include "tests/bench/ab/cli_test_util.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <fmt/format.h>
#include <fcntl.h>
#include <thread>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>
#include <unistd.h>

namespace layerbench::ab::testing {

CliResult run_ab(const std::vector<std::string>& args, const std::filesystem::path& cwd) {
  TempDir io;
  const auto out_path = io.path() / "stdout";
  const auto err_path = io.path() / "stderr";
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) ::_exit(126);
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    std::vector<char*> argv;
    std::string binary = LAYERBENCH_AB_BINARY;
    argv.push_back(binary.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "lb-ab-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::filesystem::path TempDir::file(const std::string& name, const std::string& content) const {
  const auto p = path_ / name;
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> read_lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<nlohmann::json> records(const std::filesystem::path& path, const char* type) {
  std::vector<nlohmann::json> out;
  for (const auto& line : read_lines(path)) {
    const auto j = nlohmann::json::parse(line);
    if (j.at("type") == type) out.push_back(j);
  }
  return out;
}

pid_t spawn_ab(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    const int out = ::open("bg.out", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open("bg.err", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, STDOUT_FILENO);
    ::dup2(err, STDERR_FILENO);
    std::string binary = LAYERBENCH_AB_BINARY;
    std::vector<std::string> copy = args;
    std::vector<char*> argv{binary.data()};
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(binary.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

void wait_for_lines(const std::filesystem::path& path, std::size_t lines) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);  // a watchdog: a loaded machine may be slow, never this slow
  while (std::chrono::steady_clock::now() < deadline) {
    if (std::filesystem::exists(path) && read_lines(path).size() >= lines) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ADD_FAILURE() << path << " never reached " << lines << " lines";
}

int wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int interrupt_after_lines(const std::vector<std::string>& args, const std::filesystem::path& dir,
                          const std::filesystem::path& study, std::size_t lines, int sig) {
  const pid_t pid = spawn_ab(args, dir);
  wait_for_lines(study, lines);
  ::kill(pid, sig);
  return wait_exit(pid);
}

std::string pair_value_command(const std::filesystem::path& values) {
  return fmt::format("printf 'value=%s\\n' \"$(sed -n \"$((LAYERBENCH_AB_PAIR+1))p\" '{}')\"", values.string());
}

std::string noisy_values(double mean, double spread, int n, std::uint64_t seed) {
  std::string text;
  std::uint64_t x = seed;
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int k = 0; k < 4; ++k) {  // a sum of uniforms: bell-shaped, deterministic
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      s += static_cast<double>(x >> 11) / 9007199254740992.0 - 0.5;
    }
    text += fmt::format("{:.4f}\n", mean + spread * s);
  }
  return text;
}

}  // namespace layerbench::ab::testing
