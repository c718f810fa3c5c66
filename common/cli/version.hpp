#pragma once
// What a binary was built from and against: the project version, the commit, and the versions of
// CUDA, NCCL, cuDNN and MPI whose headers it was compiled with ("none" when built without them).
#include <string>
#include <string_view>

namespace layerbench::cli {

struct BuildInfo {
  std::string version;  // project version, e.g. "0.1.0"
  std::string git_sha;  // short commit, or "unknown" (a source export without .git-sha)
  std::string cuda;     // CUDA runtime headers, or "none"
  std::string nccl;
  std::string cudnn;
  std::string mpi;      // e.g. "Open MPI 4.1.4 (MPI 3.1)"
};

const BuildInfo& build_info();

// The text `--version` prints: "PROGRAM VERSION (git SHA)" and one line of library versions.
std::string version_text(std::string_view program);

}  // namespace layerbench::cli
