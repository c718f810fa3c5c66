#include "common/output_file.hpp"

#include "common/usage.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace layerbench {
namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Follows symlinks of an existing path, so the rename replaces the target, not the link.
std::string resolved(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return path;
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) return path;  // dangling: the link is replaced
  return buf;
}

// A created-and-open temporary file next to `path` (its name starts with '.' and the target's name).
int make_temp(const std::string& path, std::string& temp_name) {
  temp_name = fmt::format("{}/.{}.tmp-XXXXXX", dir_of(path), base_of(path));
  return ::mkostemp(temp_name.data(), O_CLOEXEC);
}

bool write_all(int fd, std::string_view text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

mode_t default_mode() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return static_cast<mode_t>(0666 & ~mask);
}

}  // namespace

void check_output_path(const std::string& path, std::string_view flag) {
  if (path.empty()) throw UsageError(fmt::format("{}: empty file name", flag));
  if (path == "-") return;  // standard output
  if (path.back() == '/') throw UsageError(fmt::format("{} {}: is a directory, expected a file name", flag, path));
  const std::string target = resolved(path);
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw UsageError(fmt::format("{} {}: is a directory, expected a file name", flag, path));
    if (!S_ISREG(st.st_mode)) {
      if (::access(target.c_str(), W_OK) != 0)
        throw UsageError(fmt::format("{} {}: cannot write ({})", flag, path, std::strerror(errno)));
      return;  // a device or FIFO is written in place
    }
  }
  const std::string dir = dir_of(target);
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0)
    throw UsageError(fmt::format("{} {}: directory '{}' does not exist", flag, path, dir));
  if (!S_ISDIR(dst.st_mode)) throw UsageError(fmt::format("{} {}: '{}' is not a directory", flag, path, dir));
  std::string temp;
  const int fd = make_temp(target, temp);
  if (fd < 0)
    throw UsageError(fmt::format("{} {}: cannot create a file in '{}' ({})", flag, path, dir, std::strerror(errno)));
  ::close(fd);
  ::unlink(temp.c_str());
}

void check_output_dir(const std::string& dir, std::string_view flag) {
  if (dir.empty()) throw UsageError(fmt::format("{}: empty directory name", flag));
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0)
    throw UsageError(fmt::format("{} {}: cannot create the directory ({})", flag, dir, ec ? ec.message() : std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) throw UsageError(fmt::format("{} {}: exists and is not a directory", flag, dir));
  std::string temp;
  const int fd = make_temp(dir + "/report", temp);
  if (fd < 0) throw UsageError(fmt::format("{} {}: cannot create files there ({})", flag, dir, std::strerror(errno)));
  ::close(fd);
  ::unlink(temp.c_str());
}

namespace {

// What a path would write: the device and inode of an existing file (following symlinks), else
// the real path of its directory joined with its name (the file a creation would make). Two
// spellings of one file ("DIR/run.json" and "./run.json" from DIR, a hard link, a symlink) have
// one identity.
std::string identity_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) return fmt::format("inode {}:{}", st.st_dev, st.st_ino);
  char buf[PATH_MAX];
  const std::string dir = dir_of(path);
  if (::realpath(dir.c_str(), buf) == nullptr) return "path " + path;
  const std::string base = base_of(path);
  // A file that does not exist yet: a dangling symlink is followed by the rename to its target.
  return fmt::format("path {}/{}", buf, base);
}

}  // namespace

void check_output_paths(const std::vector<OutputPath>& outputs) {
  std::vector<std::string> ids(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].path->empty()) continue;
    check_output_path(*outputs[i].path, outputs[i].flag);
    if (*outputs[i].path == "-") continue;
    ids[i] = identity_of(resolved(*outputs[i].path));
    for (std::size_t j = 0; j < i; ++j) {
      if (!ids[j].empty() && ids[j] == ids[i])
        throw UsageError(fmt::format("{} and {} name the same file ('{}' and '{}')", outputs[j].flag, outputs[i].flag,
                                     *outputs[j].path, *outputs[i].path));
    }
  }
}

void write_file_atomic(const std::string& path, std::string_view text) {
  const std::string target = resolved(path);
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
    const int fd = ::open(target.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open ({})", path, std::strerror(errno)));
    const bool ok = write_all(fd, text);
    const int err = errno;
    ::close(fd);
    if (!ok) throw std::runtime_error(fmt::format("{}: write failed ({})", path, std::strerror(err)));
    return;
  }
  std::string temp;
  const int fd = make_temp(target, temp);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot create a temporary file ({})", path, std::strerror(errno)));
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    throw std::runtime_error(fmt::format("{}: {} ({}); the previous file is unchanged", path, what, std::strerror(err)));
  };
  if (::fchmod(fd, exists ? (st.st_mode & 07777) : default_mode()) != 0) fail("cannot set the file mode");
  if (!write_all(fd, text)) fail("write failed");
  if (::fsync(fd) != 0) fail("fsync failed");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw std::runtime_error(fmt::format("{}: close failed ({})", path, std::strerror(err)));
  }
  if (::rename(temp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    throw std::runtime_error(fmt::format("{}: cannot replace the file ({})", path, std::strerror(err)));
  }
  // The rename itself is durable once the directory is synced.
  const int dfd = ::open(dir_of(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace layerbench
