#pragma once
// Loading paired measurements for `analyze`: CSV with `base` and `candidate` columns, or a study
// JSONL written by `run`. Every problem is an InputError naming the file and line.
#include <optional>
#include <string>
#include <vector>

#include "study/study.hpp"

namespace layerbench::ab {

struct PairedInput {
  std::vector<double> base;
  std::vector<double> candidate;
  std::optional<Study> study;  // set when the file is a study JSONL
};

PairedInput load_csv(const std::string& path);
PairedInput load_study(const std::string& path);
// Chooses by content: a first non-blank '{' means JSONL.
PairedInput load_pairs(const std::string& path);

}  // namespace layerbench::ab
