#include "common/json_record.hpp"

#include <nlohmann/json.hpp>

namespace layerbench::json_record {

double Value::number() const {
  switch (kind) {
    case Kind::integer: return static_cast<double>(integer);
    case Kind::unsigned_integer: return static_cast<double>(unsigned_integer);
    default: return floating;
  }
}

bool Record::parse(std::string_view text) {
  count_ = 0;
  in_object_.clear();
  parent_ = kNone;
  is_object_ = false;
  return nlohmann::json::sax_parse(text.data(), text.data() + text.size(), this);
}

Value* Record::add() {
  const std::size_t depth = in_object_.size();
  std::size_t parent = kNone;
  if (depth == 2 && in_object_[1] && parent_ != kNone) {
    parent = parent_;
  } else if (!(depth == 1 && in_object_[0])) {
    return nullptr;  // a top-level scalar, an array element or a deeper member: not kept
  }
  if (count_ == members_.size()) members_.emplace_back();
  Member& m = members_[count_++];
  m.key = pending_key_;  // assignment reuses the slot's storage
  m.parent = parent;
  m.value.kind = Value::Kind::null;
  return &m.value;
}

bool Record::null() {
  add();  // kind null
  return true;
}

bool Record::boolean(bool v) {
  if (auto* s = add()) {
    s->kind = Value::Kind::boolean;
    s->boolean = v;
  }
  return true;
}

bool Record::number_integer(std::int64_t v) {
  if (auto* s = add()) {
    s->kind = Value::Kind::integer;
    s->integer = v;
  }
  return true;
}

bool Record::number_unsigned(std::uint64_t v) {
  if (auto* s = add()) {
    s->kind = Value::Kind::unsigned_integer;
    s->unsigned_integer = v;
  }
  return true;
}

bool Record::number_float(double v, const std::string&) {
  if (auto* s = add()) {
    s->kind = Value::Kind::floating;
    s->floating = v;
  }
  return true;
}

bool Record::string(std::string& v) {
  if (auto* s = add()) {
    s->kind = Value::Kind::string;
    s->string = v;
  }
  return true;
}

bool Record::start_object(std::size_t) {
  if (in_object_.empty()) {
    is_object_ = true;
  } else if (auto* s = add()) {
    s->kind = Value::Kind::object;
    if (in_object_.size() == 1) parent_ = count_ - 1;
  }
  in_object_.push_back(true);
  return true;
}

bool Record::start_array(std::size_t) {
  if (!in_object_.empty()) {
    if (auto* s = add()) s->kind = Value::Kind::array;
  }
  in_object_.push_back(false);
  return true;
}

bool Record::key(std::string& k) {
  pending_key_ = k;
  return true;
}

bool Record::end_object() {
  in_object_.pop_back();
  if (in_object_.size() <= 1) parent_ = kNone;
  return true;
}

bool Record::end_array() {
  in_object_.pop_back();
  if (in_object_.size() <= 1) parent_ = kNone;
  return true;
}

const Record::Member* Record::top(std::string_view key) const {
  for (std::size_t i = count_; i-- > 0;) {
    if (members_[i].parent == kNone && members_[i].key == key) return &members_[i];
  }
  return nullptr;
}

const Value* Record::find(std::string_view key) const {
  const auto* m = top(key);
  return m ? &m->value : nullptr;
}

const Value* Record::find(std::string_view parent, std::string_view key) const {
  const auto* p = top(parent);
  if (!p || p->value.kind != Value::Kind::object) return nullptr;
  const auto index = static_cast<std::size_t>(p - members_.data());
  for (std::size_t i = count_; i-- > index + 1;) {
    if (members_[i].parent == index && members_[i].key == key) return &members_[i].value;
  }
  return nullptr;
}

std::size_t Record::size(std::string_view parent) const {
  const auto* p = top(parent);
  if (!p || p->value.kind != Value::Kind::object) return 0;
  const auto index = static_cast<std::size_t>(p - members_.data());
  std::size_t n = 0;
  for (std::size_t i = index + 1; i < count_; ++i) {
    if (members_[i].parent != index) continue;
    bool repeated = false;  // a repeated key is one member, as in nlohmann::json
    for (std::size_t j = i + 1; j < count_ && !repeated; ++j) {
      repeated = members_[j].parent == index && members_[j].key == members_[i].key;
    }
    n += !repeated;
  }
  return n;
}

void Record::members(std::string_view parent, std::vector<std::pair<std::string_view, const Value*>>& out) const {
  out.clear();
  const auto* p = top(parent);
  if (!p || p->value.kind != Value::Kind::object) return;
  const auto index = static_cast<std::size_t>(p - members_.data());
  for (std::size_t i = index + 1; i < count_; ++i) {
    if (members_[i].parent == index) out.emplace_back(members_[i].key, &members_[i].value);
  }
}

}  // namespace layerbench::json_record
