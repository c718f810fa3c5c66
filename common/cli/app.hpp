#pragma once
// The command-line conventions every layerbench binary follows:
//   * usage shows the program name (never the path it was started from);
//   * every option's default is shown in --help;
//   * --version prints the version, the commit and the CUDA/NCCL/cuDNN/MPI versions built against;
//   * output files: --json FILE, --csv FILE, --markdown FILE ('-' = standard output);
//   * significance: --confidence C (interval level) or --alpha A (= 1 - C), as a fraction or a
//     percentage; a binary takes either spelling and both mean the same thing everywhere.
#include <CLI/CLI.hpp>

#include <string>
#include <string_view>

namespace layerbench::cli {

// Call on a fresh CLI::App, before adding options: names the program, shows defaults in --help
// and adds --version.
void init_app(CLI::App& app, std::string_view program);

// --FLAG FILE for an output file. `what` says what is written ("layerbench JSON (every sample)").
CLI::Option* add_output_option(CLI::App& app, const std::string& flag, std::string& path, const std::string& what);

// --confidence C and --alpha A: one setting seen two ways. Either flag sets both `confidence` and
// `alpha` (alpha = 1 - confidence; the given one exactly). Accepts 0.95 or 95%, 0.05 or 5%;
// values outside (0, 1) are rejected when parsed; the two flags exclude each other.
void add_confidence_options(CLI::App& app, double& confidence, double& alpha);

// "0.05" -> 0.05, "5%" -> 0.05, inside (0, 1) (common/numeric.hpp parse_fraction). Throws
// CLI::ValidationError naming `flag` otherwise.
double parse_fraction(const std::string& flag, const std::string& text);

}  // namespace layerbench::cli
