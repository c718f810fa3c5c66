#pragma once
// Which layer family each layerbench-moe flag applies to, and which flags it needs beside it: a
// flag given where it does not apply is exit 2 saying why, never ignored. One table
// (flag_scope.cpp); the flag-by-flag test (tests/bench/moe/flags_test.py) runs every --help flag
// against both families.
#include "moe/config/model.hpp"

#include <CLI/CLI.hpp>

#include <string_view>
#include <vector>

namespace layerbench::moe {

struct FlagScope {
  std::string_view flag;
  bool magi2 = true;       // applies to the MAGI-2 multi-head layer
  bool standard = true;    // applies to the standard expert-parallel block
  std::string_view why;    // where it does not apply: what the other family does instead
  std::vector<std::string_view> needs_any;  // given only beside one of these
};

const std::vector<FlagScope>& flag_scopes();

// Whether the flag `name` was given on the command line (after parsing).
bool given(const CLI::App& app, std::string_view name);

// Throws UsageError for the first flag given that does not apply to `block` or lacks what it needs.
void check_flag_scope(const CLI::App& app, Block block, std::string_view model_name);

}  // namespace layerbench::moe
