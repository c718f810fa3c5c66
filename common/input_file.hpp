#pragma once
// The one input layer of every binary: every file a tool reads (configs, sweeps, calibrations,
// expert tables, results, traces, studies, history inputs) is opened here.
//   * A path must name a regular file of bounded size: a directory, a FIFO, a device or a file
//     larger than the reader's limit is a UsageError (exit 2) naming the path and the flag.
//     The file is opened without blocking (a FIFO never stalls the tool) and checked with
//     fstat on the open descriptor, so what is checked is what is read.
//   * JSON is parsed strictly: invalid or truncated JSON, a number out of range (1e999) and the
//     non-standard literals NaN / Infinity are a UsageError naming the file and the position.
//   * Values read from a document are checked by the helpers below, whose messages name where
//     the value came from: the key, the file, and the flag that named the file.
// docs/input-files.md lists every file the tools read and the limits that apply.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace layerbench::input {

// Size limits (bytes). Configs and tables are small by nature; results, traces and studies can
// be large (a study of 10^6 pairs is about 300 MB), but never larger than memory should hold.
inline constexpr std::uint64_t kMaxConfigBytes = std::uint64_t{64} << 20;  // configs, tables, sweeps
inline constexpr std::uint64_t kMaxDataBytes = std::uint64_t{4} << 30;     // results, traces, studies

// Where an input came from, for messages: the flag that named the file ("--coll") and the path.
// An empty flag (a positional argument) names the path alone.
struct Origin {
  std::string flag;
  std::string path;
  // "--coll FILE" or "FILE"
  std::string describe() const;
  // "config key 'results[3].samples_ms' in --coll FILE"
  std::string key(std::string_view key) const;
};

// The result of checking a path without reading it.
enum class Kind { regular, missing, directory, other };
Kind kind_of(const std::string& path);

// Throws UsageError unless `path` names a readable regular file of at most `max_bytes`:
//   "--calibration DIR: is a directory, expected a file"
//   "--coll F: not a regular file (a FIFO); give a file"
//   "F: 5.0 GiB, more than the 4 GiB this reader accepts"
//   "F: no such file" / "F: cannot open (Permission denied)"
void check_file(const Origin& where, std::uint64_t max_bytes = kMaxDataBytes);

// The whole file's bytes as stored (after check_file's checks, on the opened descriptor). Throws UsageError as check_file does, and on a read error.
std::string read_text(const Origin& where, std::uint64_t max_bytes = kMaxDataBytes);

// Every file read_text() has read in this process, in order, with a digest of its bytes (FNV-1a,
// 64 bits): the ranks of a job compare them with rank 0's before any collective
// (harness/main.cpp), so a rank that reads other bytes under the same name is exit 2 naming it.
struct FileRead {
  std::string origin;  // Origin::describe()
  std::uint64_t digest = 0;
};
const std::vector<FileRead>& files_read();

// Strict JSON (a leading UTF-8 byte order mark is skipped): throws UsageError "WHERE: invalid or truncated JSON (...)" or, for the literals
// NaN / Infinity that Python writes, "WHERE: line L: NaN is not a JSON number (non-finite values
// are refused)". An empty (or blank) text is "WHERE: empty file".
nlohmann::json parse_json(std::string_view text, const Origin& where);

// read_text + parse_json.
nlohmann::json read_json(const Origin& where, std::uint64_t max_bytes = kMaxDataBytes);

// Checked values. `key` is the JSON path shown in messages ("results[2].samples_ms[0]").
// A finite number (an integer or a real): not a number, NaN or infinite => UsageError.
double finite(const nlohmann::json& v, std::string_view key, const Origin& where);
// A finite number >= 0 (times, sizes, bytes).
double non_negative(const nlohmann::json& v, std::string_view key, const Origin& where);
// A whole number in [lo, hi] (indices, counts).
std::int64_t whole_in(const nlohmann::json& v, std::string_view key, std::int64_t lo, std::int64_t hi,
                      const Origin& where);

}  // namespace layerbench::input
