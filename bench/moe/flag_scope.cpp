#include "bench/moe/flag_scope.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>

namespace layerbench::moe {


bool given(const CLI::App& app, std::string_view name) {
  const CLI::Option* o = app.get_option_no_throw(std::string(name));
  return o && o->count() > 0;
}

const std::vector<FlagScope>& flag_scopes() {
  static const std::vector<FlagScope> table = {
      // Both families (the one profile driver); listed for what they need.
      {"--stack-input", true, true, "", {"--layers", "--what-if", "--ab"}},
      {"--pairs", true, true, "", {"--ab"}},
      {"--ab-sequential", true, true, "", {"--ab"}},
      {"--ab-equivalence", true, true, "", {"--ab-sequential"}},
      {"--prime-stacks", true, true, "", {"--ab", "--what-if"}},
      {"--what-if-levels", true, true, "", {"--what-if", "--ab"}},
      {"--what-if-rounds", true, true, "", {"--what-if", "--ab"}},
      {"--what-if-method", true, true, "", {"--what-if", "--ab"}},
      {"--what-if-seconds", true, true, "", {"--what-if", "--ab"}},
      {"--what-if-precision", true, true, "", {"--what-if", "--ab"}},
      {"--what-if-copies", true, true, "", {"--what-if", "--ab"}},
      {"--what-if-floor-ms", true, true, "", {"--what-if", "--ab"}},
      {"--telemetry-period", true, true, "", {"--telemetry"}},
      // MAGI-2 only.
      {"--layout", true, false, "experts are sharded over the --ep ranks", {}},
      {"--framework-exchange-ms", true, false, "it has no sequence-size exchange to price (a MAGI-2 'not timed' line)", {}},
      {"--expert-gemm", true, false, "its expert path per shape is the device's default or an --expert-table row", {}},
      // Standard block only.
      {"--ep", false, true, "shards by --layout sp|tp", {}},
      {"--group-score", false, true, "routes without expert groups", {}},
      {"--expert-table", false, true, "chooses its expert path with --expert-gemm", {}},
      {"--precision", false, true, "runs its experts in BF16 (it has no FP8 path)", {}},
      {"--dispatch", false, true,
       "exchanges head slices in the act type before it routes them (its ep_dispatch has no FP8 path)", {}},
  };
  return table;
}

void check_flag_scope(const CLI::App& app, Block block, std::string_view model_name) {
  const bool magi2 = block == Block::magi2_multi_head;
  for (const auto& f : flag_scopes()) {
    if (!given(app, f.flag)) continue;
    if (magi2 && !f.magi2)
      throw UsageError(fmt::format("{} applies to the standard expert-parallel block; the MAGI-2 multi-head layer {}",
                                   f.flag, f.why));
    if (!magi2 && !f.standard)
      throw UsageError(fmt::format("{} applies to the MAGI-2 multi-head layer; {} runs the standard expert-parallel "
                                   "block: {}", f.flag, model_name, f.why));
    if (f.needs_any.empty()) continue;
    bool any = false;
    for (auto n : f.needs_any) any = any || given(app, n);
    if (!any) {
      std::string names;
      for (auto n : f.needs_any) names += (names.empty() ? "" : " or ") + std::string(n);
      throw UsageError(fmt::format("{} applies with {} only (alone it would change nothing)", f.flag, names));
    }
  }
}

}  // namespace layerbench::moe
