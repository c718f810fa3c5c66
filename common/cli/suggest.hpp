#pragma once
// "Did you mean": the closest option of a command to a flag it does not know, and the equivalents
// of hyperfine's flags (a user of hyperfine types -r, -n, -N ...). Every binary's parse-error
// message goes through parse_error_text.
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace layerbench::cli {

// Every long and short flag of `app` and of its parsed subcommands ("--pairs", "-o").
std::vector<std::string> flag_names(const CLI::App& app);

// A hint for one unknown argument ("--pair"): " (did you mean --pairs?)", or "" when nothing is
// close; a hyperfine flag ("-r") is answered with this command's equivalent when it has one.
std::string did_you_mean(const std::string& unknown, const std::vector<std::string>& flags);

// The message of a parse error, with a hint for each unknown argument it names.
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& error);

}  // namespace layerbench::cli
