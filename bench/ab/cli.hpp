#pragma once
// Command-line front end of layerbench-ab (analyze, plan, run); main() only forwards to it.

namespace layerbench::ab {

// Returns the process exit status: 0, 2 for bad input or usage, 130 after Ctrl-C in `run`.
int run_cli(int argc, char** argv);

}  // namespace layerbench::ab
