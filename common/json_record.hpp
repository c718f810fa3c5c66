#pragma once
// One JSON object of a JSON Lines file read into its top-level members (and the members of its
// top-level objects), without building a nlohmann::json document: readers of large JSONL files
// (10^6 study records) parse each line with it and reuse the storage from line to line. The
// grammar is nlohmann::json's own (its SAX parser), so a line is valid here iff
// nlohmann::json::parse accepts it; a reader reports an invalid line by parsing it with
// nlohmann::json, which gives the parser's message. Repeated keys: the last one counts, as in
// nlohmann::json.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace layerbench::json_record {

struct Value {
  enum class Kind : std::uint8_t { null, boolean, integer, unsigned_integer, floating, string, object, array };
  Kind kind = Kind::null;
  bool boolean = false;
  std::int64_t integer = 0;     // Kind::integer (nlohmann: a negative whole number)
  std::uint64_t unsigned_integer = 0;  // Kind::unsigned_integer (a whole number >= 0)
  double floating = 0;          // Kind::floating
  std::string string;           // Kind::string

  bool is_number() const { return kind == Kind::integer || kind == Kind::unsigned_integer || kind == Kind::floating; }
  bool is_whole() const { return kind == Kind::integer || kind == Kind::unsigned_integer; }
  bool is_string() const { return kind == Kind::string; }
  bool is_null() const { return kind == Kind::null; }
  // The number as a double (as nlohmann::json's get<double>()); is_number() must hold.
  double number() const;
};

class Record {
 public:
  // Parses `text` (one JSON value). False when it is not valid JSON.
  bool parse(std::string_view text);
  // The value was an object (only then are there members).
  bool is_object() const { return is_object_; }
  // A top-level member; nullptr when absent.
  const Value* find(std::string_view key) const;
  // A member of the top-level object `parent` (e.g. "metrics"); nullptr when absent or when
  // `parent` is not an object. Members of deeper objects are not kept (their parent's kind tells).
  const Value* find(std::string_view parent, std::string_view key) const;
  // How many members the top-level object `parent` has (0 when absent or not an object).
  std::size_t size(std::string_view parent) const;
  // The members of the top-level object `parent` in file order (a repeated key repeats), into
  // `out` (cleared first; its storage is reused).
  void members(std::string_view parent, std::vector<std::pair<std::string_view, const Value*>>& out) const;

  // The SAX interface of nlohmann::json (used by parse()).
  bool null();
  bool boolean(bool v);
  bool number_integer(std::int64_t v);
  bool number_unsigned(std::uint64_t v);
  bool number_float(double v, const std::string& text);
  bool string(std::string& v);
  template <class Binary>
  bool binary(Binary&) {
    return false;  // not JSON text
  }
  bool start_object(std::size_t);
  bool key(std::string& k);
  bool end_object();
  bool start_array(std::size_t);
  bool end_array();
  template <class Exception>
  bool parse_error(std::size_t, const std::string&, const Exception&) {
    return false;
  }

 private:
  struct Member {
    std::string key;
    Value value;
    std::size_t parent = kNone;  // index of the top-level member this is a member of; kNone = top level
  };
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  Value* add();  // the slot for the value about to be read (nullptr when it is not kept)
  const Member* top(std::string_view key) const;

  std::vector<Member> members_;  // reused from parse to parse: [0, count_) are this record's
  std::size_t count_ = 0;
  std::vector<bool> in_object_;  // per open container: an object (true) or an array
  std::string pending_key_;
  std::size_t parent_ = kNone;   // the open top-level object whose members are kept
  bool is_object_ = false;
};

}  // namespace layerbench::json_record
