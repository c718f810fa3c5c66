#include "study/study_file.hpp"
#include "common/json_text.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <stdexcept>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "study/errors.hpp"
#include "common/output_file.hpp"

namespace layerbench::ab {
namespace {

std::string read_all(int fd) {
  std::string text;
  char buf[65536];
  if (::lseek(fd, 0, SEEK_SET) < 0) return text;
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

void write_all(int fd, const std::string& text, const std::string& path) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(fmt::format("{}: write failed ({})", path, std::strerror(errno)));
    done += static_cast<std::size_t>(n);
  }
}

// What a resume must keep: the study is one experiment only if these are unchanged.
void check_same(const StudyConfig& old, const StudyConfig& now, const std::string& path) {
  auto differs = [&](const char* flag, const auto& a, const auto& b) {
    if (a == b) return;
    throw InputError(fmt::format("{}: the study was written with {} '{}'; refusing to resume with '{}' (use the same "
                                 "flags, or start a new file)", path, flag, a, b));
  };
  differs("--base", old.base, now.base);
  differs("--candidate", old.candidate, now.candidate);
  differs("--prepare", old.prepare, now.prepare);
  differs("--metric", old.metric, now.metric);
  differs("--check-output", old.check_output, now.check_output);
  if (old.more_candidates != now.more_candidates || old.metrics != now.metrics) {
    throw InputError(fmt::format("{}: the study was written with other arms or metrics; refusing to resume with "
                                 "different ones (use the same flags, or start a new file)", path));
  }
  differs("--order", old.order, now.order);
  differs("--warmup", old.warmup, now.warmup);
  differs("--seed", old.seed, now.seed);
  if (old.sequential.has_value() != now.sequential.has_value() ||
      (old.sequential && sequential_design_json(*old.sequential) != sequential_design_json(*now.sequential))) {
    throw InputError(fmt::format("{}: recorded with {} stop rule; resume with the same --sequential, "
                                 "--equivalence, --tune-pairs and --confidence", path,
                                 old.sequential ? json_text(sequential_design_json(*old.sequential)) : "no sequential"));
  }
}

}  // namespace

StudyFile::StudyFile(const std::string& path, const StudyConfig& config, bool resume, bool force) : path_(path) {
  check_output_path(path, "--study");  // a directory, a missing directory, an unwritable place
  struct stat st {};
  const bool existed = ::stat(path.c_str(), &st) == 0;
  if (existed && !S_ISREG(st.st_mode)) throw InputError(fmt::format("--study {}: not a regular file", path));
  // No O_TRUNC, ever: nothing is changed before the content is known to be this study.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(fmt::format("--study {}: cannot open ({})", path, std::strerror(errno)));
  bool locked = false;
  try {
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      throw InputError(fmt::format("--study {}: another layerbench-ab run is writing this study (it holds the lock); "
                                   "wait for it to finish or choose another file", path));
    }
    locked = true;
    std::string text = read_all(fd_);
    if (!text.empty() && force) {
      (void)parse_journal(text, path);  // throws for anything that is not a study: the file is untouched
      if (::ftruncate(fd_, 0) != 0)
        throw InputError(fmt::format("--study {}: cannot empty the file ({})", path, std::strerror(errno)));
      text.clear();
    }
    if (!text.empty() && !resume) {
      throw InputError(fmt::format("--study {}: the file exists; --resume continues it, --force starts it afresh, "
                                   "or choose another path with --study FILE", path));
    }
    if (text.empty()) {
      study_.config = config;
      append(header_json(config));
      return;
    }
    study_ = parse_journal(text, path);  // throws for anything that is not a study: the file is untouched
    check_same(study_.config, config, path);
    resumed_ = true;
    // Repair the end only now: cut a torn last line, or end a complete one with its newline.
    const auto end = text.find_last_not_of(" \t\r\n");
    const auto nl = text.rfind('\n', end);
    const std::size_t last_start = nl == std::string::npos ? 0 : nl + 1;
    if (!nlohmann::json::accept(text.substr(last_start, end + 1 - last_start))) {
      if (::ftruncate(fd_, static_cast<off_t>(last_start)) != 0)
        throw InputError(fmt::format("{}: cannot cut the torn last line ({})", path, std::strerror(errno)));
    } else if (text.back() != '\n') {
      write_all(fd_, "\n", path);
    }
    study_.config.pairs = config.pairs;  // a resume may extend the study (or raise the sequential cap)
    study_.config.retries = config.retries;
    study_.config.ignore_failure = config.ignore_failure;
    study_.config.timeout = config.timeout;
  } catch (...) {
    // A file this run created and left empty goes again; any other file stays as it was.
    if (locked && !existed && ::lseek(fd_, 0, SEEK_END) == 0) ::unlink(path.c_str());
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

StudyFile::~StudyFile() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

void StudyFile::append(const nlohmann::json& record) {
  write_all(fd_, json_text(record) + "\n", path_);
  ::fsync(fd_);
}

}  // namespace layerbench::ab
