#pragma once
// The JSON block of a sequential study's stop (design, stop reason, pairs, interval), shared by
// layerbench-ab, layerbench-moe --ab and layerbench-gate.
#include <nlohmann/json.hpp>

#include "stats/sequential.hpp"

namespace layerbench::reports {

nlohmann::json sequential_json(const stats::SequentialResult& s);

}  // namespace layerbench::reports
