#include "common/output_file.hpp"
#include "common/usage.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <random>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace fs = std::filesystem;
using layerbench::UsageError;

namespace {

fs::path scratch(const char* name) {
  const auto dir = fs::temp_directory_path() / fmt::format("lb-output-test-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST(OutputFile, StartUpChecks) {
  const auto dir = scratch("check");
  EXPECT_THROW(layerbench::check_output_path(dir.string(), "--json"), UsageError);           // a directory
  EXPECT_THROW(layerbench::check_output_path(dir.string() + "/", "--json"), UsageError);
  EXPECT_THROW(layerbench::check_output_path((dir / "no/such/x.json").string(), "--json"), UsageError);
  EXPECT_THROW(layerbench::check_output_path("/proc/lb-x.json", "--json"), UsageError);     // cannot create
  EXPECT_NO_THROW(layerbench::check_output_path((dir / "x.json").string(), "--json"));
  EXPECT_FALSE(fs::exists(dir / "x.json"));  // the probe leaves nothing behind
  EXPECT_TRUE(fs::is_empty(dir));
  EXPECT_NO_THROW(layerbench::check_output_path("/dev/null", "--json"));
  const std::string a = (dir / "a").string(), b = (dir / "./a").string(), c = (dir / "c").string();
  EXPECT_THROW(layerbench::check_output_paths({{"--json", &a}, {"--csv", &a}}), UsageError);
  EXPECT_NO_THROW(layerbench::check_output_paths({{"--json", &a}, {"--csv", &c}}));
  try {
    layerbench::check_output_path(dir.string(), "--json");
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), fmt::format("--json {}: is a directory, expected a file name", dir.string()));
  }
  fs::remove_all(dir);
}

TEST(OutputFile, ReplacesAtomicallyAndKeepsTheMode) {
  const auto dir = scratch("write");
  const auto p = dir / "r.json";
  layerbench::write_file_atomic(p.string(), "old\n");
  fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  layerbench::write_file_atomic(p.string(), "new\n");
  EXPECT_EQ(slurp(p), "new\n");
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  // A symlink is followed: the target changes, the link stays.
  fs::create_symlink(p, dir / "link.json");
  layerbench::write_file_atomic((dir / "link.json").string(), "via link\n");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(slurp(p), "via link\n");
  layerbench::write_file_atomic("/dev/null", "discarded");  // a device is written in place, never replaced
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_THROW(layerbench::write_file_atomic((dir / "no/x").string(), "x"), std::runtime_error);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 2);  // no temporary left
  fs::remove_all(dir);
}

// A SIGKILL at a random moment of a large write leaves the old file or the complete new one.
TEST(OutputFile, KillDuringWriteLeavesOldOrNew) {
  const auto dir = scratch("kill");
  const auto p = dir / "big.json";
  const std::string old_text(1 << 20, 'o');
  std::mt19937 rng(20261201);
  int saw_old = 0, saw_new = 0;
  for (int round = 0; round < 20; ++round) {
    layerbench::write_file_atomic(p.string(), old_text);
    const std::string new_text = std::string(48u << 20, static_cast<char>('a' + round % 26)) + "\n";
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      layerbench::write_file_atomic(p.string(), new_text);
      ::_exit(0);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 150000)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    const std::string now = slurp(p);
    if (now == old_text) ++saw_old;
    else if (now == new_text) ++saw_new;
    else FAIL() << "round " << round << ": a partial file of " << now.size() << " bytes";
  }
  EXPECT_EQ(saw_old + saw_new, 20);
  std::printf("killed 20 writes: %d left the old file, %d the complete new one\n", saw_old, saw_new);
  fs::remove_all(dir);
}
