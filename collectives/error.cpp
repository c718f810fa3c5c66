#include "collectives/error.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <mutex>

namespace layerbench {
namespace {
struct Identity {
  std::mutex mu;
  int rank = -1;
  std::string host;
};
Identity& identity() {
  static Identity id;  // written once at start-up, read when an error is formatted
  return id;
}
}  // namespace

void set_process_identity(int world_rank, std::string host) {
  auto& id = identity();
  std::lock_guard lk(id.mu);
  id.rank = world_rank;
  id.host = std::move(host);
}

std::string rank_tag() {
  auto& id = identity();
  std::lock_guard lk(id.mu);
  if (id.rank < 0) return "rank ?";
  return fmt::format("rank {} on {}", id.rank, id.host);
}

namespace detail {
void throw_error(std::string_view library, std::string_view call, std::string_view message,
                 std::source_location loc) {
  throw Error(fmt::format("[{}] {} error in `{}`: {} ({}:{})", rank_tag(), library, call, message,
                          loc.file_name(), loc.line()));
}

std::string mpi_error_string(int code) {
  char buf[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, buf, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(buf, static_cast<std::size_t>(len));
}
}  // namespace detail
}  // namespace layerbench
