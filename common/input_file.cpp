#include "common/input_file.hpp"
#include "common/json_text.hpp"

#include "common/text.hpp"
#include "common/usage.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

namespace layerbench::input {
namespace {

std::string bytes_text(std::uint64_t b) {
  if (b >= (std::uint64_t{1} << 30)) return fmt::format("{:.3g} GiB", static_cast<double>(b) / (1 << 30));
  if (b >= (std::uint64_t{1} << 20)) return fmt::format("{:.3g} MiB", static_cast<double>(b) / (1 << 20));
  return fmt::format("{} bytes", b);
}

const char* kind_word(mode_t m) {
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

// An open descriptor of a checked regular file (closed by the destructor).
struct Fd {
  int fd = -1;
  std::uint64_t size = 0;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void check_stat(const Origin& where, const struct stat& st, std::uint64_t max_bytes) {
  if (S_ISDIR(st.st_mode)) throw UsageError(fmt::format("{}: is a directory, expected a file", where.describe()));
  if (!S_ISREG(st.st_mode))
    throw UsageError(fmt::format("{}: {}, expected a regular file", where.describe(), kind_word(st.st_mode)));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes)
    throw UsageError(fmt::format("{}: {}, more than the {} this reader accepts", where.describe(), bytes_text(size),
                                 bytes_text(max_bytes)));
}

// Opens without blocking (O_NONBLOCK: a FIFO with no writer would block open() itself), checks the
// descriptor, then reads it blocking.
void open_checked(const Origin& where, std::uint64_t max_bytes, Fd& f) {
  if (where.path.empty()) throw UsageError(fmt::format("{}: empty file name", where.flag.empty() ? "input" : where.flag));
  f.fd = ::open(where.path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (f.fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw UsageError(fmt::format("{}: no such file (cannot open it)", where.describe()));
    if (err == EISDIR) throw UsageError(fmt::format("{}: is a directory, expected a file", where.describe()));
    throw UsageError(fmt::format("{}: cannot open ({})", where.describe(), std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw UsageError(fmt::format("{}: cannot stat ({})", where.describe(), std::strerror(errno)));
  check_stat(where, st, max_bytes);
  const int flags = ::fcntl(f.fd, F_GETFL);
  if (flags >= 0) ::fcntl(f.fd, F_SETFL, flags & ~O_NONBLOCK);
  f.size = static_cast<std::uint64_t>(st.st_size);
}

// 1-based line of byte offset `pos` in `text`.
std::size_t line_of(std::string_view text, std::size_t pos) {
  pos = std::min(pos, text.size());
  std::size_t line = 1;
  for (std::size_t i = 0; i < pos; ++i) line += text[i] == '\n';
  return line;
}

}  // namespace

std::string Origin::describe() const { return flag.empty() ? path : fmt::format("{} {}", flag, path); }

std::string Origin::key(std::string_view k) const { return fmt::format("key '{}' in {}", k, describe()); }

Kind kind_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Kind::missing;
  if (S_ISDIR(st.st_mode)) return Kind::directory;
  return S_ISREG(st.st_mode) ? Kind::regular : Kind::other;
}

void check_file(const Origin& where, std::uint64_t max_bytes) {
  Fd f;
  open_checked(where, max_bytes, f);
}

namespace {
std::vector<FileRead>& reads() {
  static std::vector<FileRead> all;
  return all;
}
}  // namespace

const std::vector<FileRead>& files_read() { return reads(); }

std::string read_text(const Origin& where, std::uint64_t max_bytes) {
  Fd f;
  open_checked(where, max_bytes, f);
  std::string out;
  out.resize(static_cast<std::size_t>(f.size));
  std::size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      // A file that grew while it was read: read on, within the limit.
      if (out.size() >= max_bytes) {
        char probe;
        const ssize_t n = ::read(f.fd, &probe, 1);
        if (n > 0)
          throw UsageError(fmt::format("{}: grew past the {} this reader accepts while it was read", where.describe(),
                                       bytes_text(max_bytes)));
        if (n == 0) break;
        if (errno == EINTR) continue;
        throw UsageError(fmt::format("{}: read error ({})", where.describe(), std::strerror(errno)));
      }
      out.resize(std::min<std::uint64_t>(max_bytes, std::max<std::size_t>(out.size() * 2, 1 << 16)));
    }
    const ssize_t n = ::read(f.fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw UsageError(fmt::format("{}: read error ({})", where.describe(), std::strerror(errno)));
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  out.resize(done);
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (const unsigned char c : out) h = (h ^ c) * 1099511628211ull;
  reads().push_back({where.describe(), h});
  return out;
}

nlohmann::json parse_json(std::string_view text, const Origin& where) {
  text = text::strip_bom(text);  // a UTF-8 byte order mark is accepted, as CRLF is
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
    throw UsageError(fmt::format("{}: empty file", where.describe()));
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // The position nlohmann reports is at or just past the byte it stopped at: find the token
    // there and name a non-finite literal (NaN, Infinity) as such.
    auto word = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0 || c == '-'; };
    std::size_t s = std::min<std::size_t>(e.byte > 0 ? e.byte - 1 : 0, text.empty() ? 0 : text.size() - 1);
    while (s > 0 && word(text[s - 1])) --s;
    for (std::string_view lit : {"-Infinity", "Infinity", "NaN", "-inf", "inf", "nan"})
      if (text.substr(s, lit.size()) == lit)
        throw UsageError(fmt::format("{}: line {}: {} is not a JSON number (non-finite values are refused)",
                                     where.describe(), line_of(text, s), lit));
    throw UsageError(fmt::format("{}: invalid or truncated JSON ({})", where.describe(), e.what()));
  } catch (const nlohmann::json::exception& e) {  // number overflow ("1e999")
    throw UsageError(fmt::format("{}: invalid or truncated JSON ({})", where.describe(), e.what()));
  }
}

nlohmann::json read_json(const Origin& where, std::uint64_t max_bytes) {
  return parse_json(read_text(where, max_bytes), where);
}

double finite(const nlohmann::json& v, std::string_view key, const Origin& where) {
  if (!v.is_number())
    throw UsageError(fmt::format("{}: {} is not a number", where.key(key), v.is_null() ? "null" : json_text(v)));
  const double x = v.get<double>();
  if (std::isnan(x)) throw UsageError(fmt::format("{}: NaN is not a finite number", where.key(key)));
  if (!std::isfinite(x)) throw UsageError(fmt::format("{}: {} is not a finite number", where.key(key), json_text(v)));
  return x;
}

double non_negative(const nlohmann::json& v, std::string_view key, const Origin& where) {
  const double x = finite(v, key, where);
  if (x < 0) throw UsageError(fmt::format("{}: {} is negative (times and sizes are >= 0)", where.key(key), json_text(v)));
  return x;
}

std::int64_t whole_in(const nlohmann::json& v, std::string_view key, std::int64_t lo, std::int64_t hi,
                      const Origin& where) {
  if (!v.is_number_integer())
    throw UsageError(fmt::format("{}: {} is not a whole number", where.key(key), v.is_null() ? "null" : json_text(v)));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    throw UsageError(fmt::format("{}: {} is not in [{}, {}]", where.key(key), json_text(v), lo, hi));
  const auto x = v.get<std::int64_t>();
  if (x < lo || x > hi) throw UsageError(fmt::format("{}: {} is not in [{}, {}]", where.key(key), x, lo, hi));
  return x;
}

}  // namespace layerbench::input
