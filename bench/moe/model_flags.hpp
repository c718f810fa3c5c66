#pragma once
// layerbench-moe's model flags (--model, --hf-config, --list-models, --describe, field
// overrides, --ep); the model is resolved when parsing completes (UsageError naming the key).
#include "bench/moe/run_config.hpp"

#include <CLI/CLI.hpp>

namespace layerbench::moe {

void add_model_flags(CLI::App& app, RunConfig& c);

}  // namespace layerbench::moe
