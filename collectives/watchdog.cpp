#include "collectives/watchdog.hpp"

#include "collectives/error.hpp"

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace layerbench {
namespace {

constexpr auto kPeriod = std::chrono::milliseconds(100);
constexpr std::int64_t kStaleNs = 1'500'000'000;  // no heartbeat for 1.5 s: the process is not running

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();  // CLOCK_MONOTONIC: comparable between processes of one machine
}

// One rank's entry on the board (plain atomics: lock-free, so valid in memory shared between processes).
struct Slot {
  std::atomic<std::int64_t> heartbeat_ns{0};
  std::atomic<std::int64_t> wait_start_ns{0};  // 0: not inside an MPI call
  std::atomic<std::int64_t> last_end_ns{0};    // when the last MPI call returned
  std::atomic<int> world_rank{-1};
  std::atomic<int> pid{0};
  char call[64] = {};  // name of the current call; written before wait_start_ns (messages only)
};
static_assert(std::atomic<std::int64_t>::is_always_lock_free);

Slot g_private;                        // before the board exists
std::atomic<Slot*> g_mine{&g_private};

struct Board {
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Win win = MPI_WIN_NULL;
  std::vector<Slot*> slots;  // by local rank
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool quit = false;
};
Board* g_board = nullptr;
std::atomic<double> g_timeout_s{300};

// "MPI_Allreduce" from the call's text "MPI_Allreduce(MPI_IN_PLACE, ...)"; no allocation (hot path).
void copy_call_name(char* dst, std::size_t cap, const char* text) {
  std::size_t i = 0;
  for (; i + 1 < cap && text[i] != '\0' && text[i] != '('; ++i) dst[i] = text[i];
  dst[i] = '\0';
}

double seconds(std::int64_t ns) { return static_cast<double>(ns) * 1e-9; }

// What every other rank on this machine is doing, for the message; `reporter` tells whether this
// rank is the lowest live rank that timed out too (the one that speaks).
std::string survey(const Board& b, const Slot& me, std::int64_t now, std::int64_t timeout_ns, bool& reporter) {
  std::vector<std::string> stuck, busy, waiting;
  reporter = true;
  for (const Slot* s : b.slots) {
    if (s == &me) continue;
    const int rank = s->world_rank.load();
    const std::int64_t hb = s->heartbeat_ns.load(), ws = s->wait_start_ns.load();
    if (now - hb > kStaleNs) {
      stuck.push_back(fmt::format("rank {} (pid {}) shows no sign of life for {:.1f} s (stopped, or hung)", rank,
                                  s->pid.load(), seconds(now - hb)));
    } else if (ws == 0) {
      busy.push_back(fmt::format("rank {} (pid {}) is not in an MPI call (busy for {:.1f} s since its last one)", rank,
                                 s->pid.load(), seconds(now - s->last_end_ns.load())));
    } else {
      waiting.push_back(fmt::format("{}", rank));
      if (now - ws > timeout_ns && rank < me.world_rank.load()) reporter = false;
    }
  }
  std::string out;
  if (!stuck.empty() || !busy.empty()) {
    out += "; holding the job up: ";
    for (std::size_t i = 0; i < stuck.size(); ++i) out += (i ? ", " : "") + stuck[i];
    for (std::size_t i = 0; i < busy.size(); ++i) out += (i || !stuck.empty() ? ", " : "") + busy[i];
  } else {
    out += "; every rank on this machine is waiting in MPI (the stuck rank is on another machine, or the call "
           "itself takes longer than --timeout)";
  }
  if (!waiting.empty()) {
    out += "; also waiting: rank";
    out += waiting.size() > 1 ? "s " : " ";
    for (std::size_t i = 0; i < waiting.size(); ++i) out += (i ? ", " : "") + waiting[i];
  }
  return out;
}

[[noreturn]] void time_out(Board& b, Slot& me, std::int64_t now, std::int64_t timeout_ns) {
  bool reporter = true;
  const std::string others = survey(b, me, now, timeout_ns, reporter);
  if (reporter) {
    const std::string msg = fmt::format(
        "layerbench: [{}] timed out: {} has waited {:.1f} s (--timeout {:g}){}. Ending the job.\n", rank_tag(), me.call,
        seconds(now - me.wait_start_ns.load()), g_timeout_s.load(), others);
    (void)!::write(STDERR_FILENO, msg.data(), msg.size());
  } else {
    // The lowest waiting rank speaks; this one leaves a moment later unless mpirun ends it first.
    std::this_thread::sleep_for(std::chrono::seconds(2));
  }
  ::_exit(1);
}

void watch(Board* b) {
  Slot& me = *g_mine.load();
  std::unique_lock lock(b->mu);
  while (!b->quit) {
    const std::int64_t now = now_ns();
    me.heartbeat_ns.store(now);
    const double t = g_timeout_s.load();
    const std::int64_t ws = me.wait_start_ns.load();
    if (t > 0 && ws != 0) {
      const auto timeout_ns = static_cast<std::int64_t>(t * 1e9);
      if (now - ws > timeout_ns) time_out(*b, me, now, timeout_ns);
    }
    b->cv.wait_for(lock, kPeriod);
  }
}

}  // namespace

namespace detail {

MpiWaitScope::MpiWaitScope(const char* call) noexcept {
  Slot& s = *g_mine.load(std::memory_order_relaxed);
  if (s.wait_start_ns.load(std::memory_order_relaxed) != 0) return;  // nested: the outer call counts
  copy_call_name(s.call, sizeof s.call, call);
  s.wait_start_ns.store(now_ns(), std::memory_order_release);
  owner_ = true;
}

MpiWaitScope::~MpiWaitScope() {
  if (!owner_) return;
  Slot& s = *g_mine.load(std::memory_order_relaxed);
  s.last_end_ns.store(now_ns(), std::memory_order_relaxed);
  s.wait_start_ns.store(0, std::memory_order_release);
}

}  // namespace detail

namespace watchdog {

void start(double timeout_s) {
  if (g_board) return;
  g_timeout_s = timeout_s;
  auto* b = new Board;
  int world_rank = 0, local_rank = 0, local_size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world_rank, MPI_INFO_NULL, &b->local) != MPI_SUCCESS) {
    delete b;
    return;  // no board: the watchdog cannot run here (the job still works)
  }
  MPI_Comm_rank(b->local, &local_rank);
  MPI_Comm_size(b->local, &local_size);
  void* base = nullptr;
  if (MPI_Win_allocate_shared(static_cast<MPI_Aint>(sizeof(Slot)), 1, MPI_INFO_NULL, b->local, &base, &b->win) !=
      MPI_SUCCESS) {
    MPI_Comm_free(&b->local);
    delete b;
    return;
  }
  Slot* mine = new (base) Slot;
  mine->world_rank = world_rank;
  mine->pid = static_cast<int>(::getpid());
  mine->heartbeat_ns = now_ns();
  mine->last_end_ns = now_ns();
  MPI_Barrier(b->local);  // every slot constructed before anyone reads them
  for (int r = 0; r < local_size; ++r) {
    MPI_Aint size = 0;
    int disp = 0;
    void* p = nullptr;
    MPI_Win_shared_query(b->win, r, &size, &disp, &p);
    b->slots.push_back(static_cast<Slot*>(p));
  }
  g_mine = mine;
  g_board = b;
  b->thread = std::thread(watch, b);
}

void set_timeout(double seconds) { g_timeout_s = seconds; }
double timeout() { return g_timeout_s; }

void stop() {
  Board* b = g_board;
  if (!b) return;
  {
    std::lock_guard lock(b->mu);
    b->quit = true;
  }
  b->cv.notify_all();
  b->thread.join();
  g_mine = &g_private;
  g_board = nullptr;
  MPI_Win_free(&b->win);
  MPI_Comm_free(&b->local);
  delete b;
}

}  // namespace watchdog
}  // namespace layerbench
