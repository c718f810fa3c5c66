#pragma once
// Helpers shared by the readers of reports/inputs.cpp and reports/inputs_study.cpp (not an API).
#include "reports/inputs.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace layerbench::reports::detail {

std::string trim(const std::string& s);
std::string lower(std::string s);
std::vector<std::string> split_csv_cells(const std::string& line);
// A finite number or std::runtime_error("WHERE: 'cell' is not a finite number").
double parse_number(const std::string& cell, const std::string& where);
// Complete pairs in id order into `study` (incomplete ones dropped); throws on a negative value or none.
PairedStudy assemble(std::map<long long, std::pair<double, double>> pairs, PairedStudy study);

}  // namespace layerbench::reports::detail
