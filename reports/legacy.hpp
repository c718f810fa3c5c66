#pragma once
// Files written before the measurement contract (schema layerbench/1) carry no roles or work.
// They are still read: this is the one place that infers a role from a name, for those files
// only (a layerbench/2 file's declared roles are never second-guessed).
#include "reports/inputs.hpp"

#include <nlohmann/json.hpp>

namespace layerbench::reports {

// Sets role, parent, instances and work of every result of a layerbench/1 document:
//   layerbench-moe: whole_layer is the total; components the file marks "in_layer": false are
//     probes; stack_* are stacks of config.layers; *reference* are references (metrics.flops);
//     everything else is a part of the total (metrics.flops / metrics.bytes as declared work).
//   layerbench-attn (groups "topology/S=..."): "total" is each group's total, the collectives
//     (all_to_all, all_gather, length exchange) communication, the rest parts.
//   layerbench-coll (params op + bytes): probes with bytes = params.bytes and the bus factor
//     recovered from metrics busbw / algbw.
void infer_v1_roles(ResultFile& file, const nlohmann::json& doc);

}  // namespace layerbench::reports
