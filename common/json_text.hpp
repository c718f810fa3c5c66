#pragma once
// JSON text of a document whatever bytes its strings hold. Text from outside — what a measured
// command prints, names and labels given on the command line, strings read from files — need not
// be UTF-8; nlohmann::json's dump() throws on an invalid byte, which would end a study that has
// already run. Every document the tools write or print goes through json_text(): an invalid
// byte becomes U+FFFD (the replacement character) and the run goes on.
#include <nlohmann/json.hpp>

#include <string>

namespace layerbench {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace layerbench
