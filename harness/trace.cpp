#include "harness/trace.hpp"
#include "common/json_text.hpp"

#include "common/output_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <unistd.h>

namespace layerbench::harness {

namespace {
constexpr std::size_t kPoolStart = 64;
}

TraceRecorder::TraceRecorder(Communicator& world, int iterations)
    : world_(world), dev_(world.device()), iterations_(iterations) {
  origin_ = dev_.make_timer();
  spare_ = dev_.make_timer();
  for (std::size_t i = 0; i < kPoolStart; ++i) pool_.push_back(dev_.make_timer());
  offsets_begin_ = measure_clock_offsets(world_);
  created_ns_ = steady_ns();
  dev_.set_collective_observer(this);
}

TraceRecorder::~TraceRecorder() {
  if (dev_.collective_observer() == this) dev_.set_collective_observer(nullptr);
}

TraceRecorder* TraceRecorder::of(const Device& dev) { return dynamic_cast<TraceRecorder*>(dev.collective_observer()); }

Timer& TraceRecorder::pooled_timer(std::size_t i) {
  while (pool_.size() <= i) pool_.push_back(dev_.make_timer());
  return *pool_[i];
}

int TraceRecorder::track_of(Stream s, bool comm) const {
  if (comm) return reports::kTrackComm;
  if (s.handle != nullptr && s.handle == dev_.comm_stream().handle) return reports::kTrackComm;
  return reports::kTrackCompute;
}

void TraceRecorder::begin_series(Stream s) {
  ++series_;
  // The origin mark with the host clock read on both sides of it (the stream is idle): the
  // tightest of a few brackets, so the host's own latency between the readings counts once.
  std::int64_t best = -1;
  for (int k = 0; k < 5; ++k) {
    const std::int64_t h0 = steady_ns();
    spare_->start(s);
    spare_->stop(s);
    (void)spare_->elapsed_ms();
    const std::int64_t h1 = steady_ns();
    if (best < 0 || h1 - h0 < best) {
      best = h1 - h0;
      origin_ns_ = h0 + (h1 - h0) / 2;
      origin_error_ns_ = (h1 - h0 + 1) / 2;
      std::swap(origin_, spare_);  // the tightest attempt's marks are the origin
    }
    if (origin_->start_steady_ns() >= 0) break;
  }
  // A timer whose marks are host readings needs no bracket (host backend).
  if (const std::int64_t host = origin_->start_steady_ns(); host >= 0) {
    origin_ns_ = host;
    origin_error_ns_ = 0;
  }
  max_origin_error_ns_ = std::max(max_origin_error_ns_, origin_error_ns_);
}

std::int64_t TraceRecorder::device_ns(Timer& t) {
  const std::int64_t host = t.start_steady_ns();
  return host >= 0 ? host : origin_ns_ + t.start_since_ns(*origin_);
}

std::uint64_t TraceRecorder::open(const std::string& name, int iteration, bool host_clock) {
  reports::TraceSlice s;
  s.name = name;
  s.cat = "component";
  s.pid = world_.rank();
  s.tid = reports::kTrackCompute;
  open_id_ = next_id_++;
  s.args = {{"id", open_id_}, {"series", series_}, {"iteration", iteration},
            {"clock", host_clock ? "host" : (world_.backend() == Backend::cuda ? "cuda events" : "steady_clock")}};
  slices_.push_back(std::move(s));
  return open_id_;
}

void TraceRecorder::end_body() { open_id_ = 0; }

namespace {
reports::TraceSlice* find_slice(std::vector<reports::TraceSlice>& v, std::uint64_t id) {
  for (auto it = v.rbegin(); it != v.rend(); ++it)
    if (it->args.value("id", std::uint64_t{0}) == id) return &*it;
  return nullptr;
}
}  // namespace

void TraceRecorder::close(std::uint64_t id, Timer& timer, double sample_ms) {
  if (auto* s = find_slice(slices_, id)) {
    s->ts_ns = device_ns(timer);
    s->dur_ns = timer.elapsed_ns();
    s->args["sample_ms"] = sample_ms;
  }
}

void TraceRecorder::close(std::uint64_t id, std::int64_t t0_ns, std::int64_t t1_ns, double sample_ms) {
  if (auto* s = find_slice(slices_, id)) {
    s->ts_ns = t0_ns;
    s->dur_ns = t1_ns - t0_ns;
    s->args["sample_ms"] = sample_ms;
  }
}

void TraceRecorder::wait(const char* name, const std::string& before, int iteration, std::int64_t t0_ns,
                         std::int64_t t1_ns) {
  reports::TraceSlice s;
  s.name = name;
  s.cat = "wait";
  s.pid = world_.rank();
  s.tid = reports::kTrackHost;
  s.ts_ns = t0_ns;
  s.dur_ns = t1_ns - t0_ns;
  s.args = {{"id", next_id_++}, {"series", series_}, {"iteration", iteration}, {"before", before}};
  slices_.push_back(std::move(s));
}

std::uint64_t TraceRecorder::begin(const CollectiveCall& call) {
  if (open_id_ == 0) return 0;  // outside a traced component
  Pending p;
  p.timer = pending_.size();
  p.slice.name = call.op;
  p.slice.cat = "collective";
  p.slice.pid = world_.rank();
  p.slice.tid = track_of(call.stream, call.on_comm_stream);
  p.slice.args = {{"id", next_id_++}, {"parent", open_id_}, {"bytes", call.bytes}, {"peers", call.peers},
                  {"async", call.on_comm_stream}, {"series", series_}};
  pooled_timer(p.timer).start(call.stream);
  pending_.push_back(std::move(p));
  return pending_.size();  // token = index + 1
}

void TraceRecorder::end(std::uint64_t token, Stream s) {
  if (token == 0 || token > pending_.size()) return;
  auto& p = pending_[token - 1];
  pooled_timer(p.timer).stop(s);
  p.ended = true;
}

void TraceRecorder::end_series(const std::string& name, std::span<const double> rank_max_ms) {
  for (auto& p : pending_) {
    if (!p.ended) continue;  // a handle never waited for: no end mark
    Timer& t = pooled_timer(p.timer);
    p.slice.dur_ns = t.elapsed_ns();
    p.slice.ts_ns = device_ns(t);
    slices_.push_back(std::move(p.slice));
  }
  pending_.clear();
  for (auto& s : slices_) {
    if (s.cat != "component" || s.name != name || s.args.value("series", -1) != series_) continue;
    const auto i = s.args.value("iteration", -1);
    if (i >= 0 && static_cast<std::size_t>(i) < rank_max_ms.size()) s.args["rank_max_ms"] = rank_max_ms[static_cast<std::size_t>(i)];
  }
}

void TraceRecorder::write(const std::string& path, nlohmann::json metadata) {
  const auto offsets_end = measure_clock_offsets(world_);
  double origin_err = static_cast<double>(max_origin_error_ns_);
  world_.control_max(std::span<double>(&origin_err, 1));
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  auto mine = nlohmann::json::array();
  for (const auto& s : slices_)
    mine.push_back({{"name", s.name}, {"cat", s.cat}, {"tid", s.tid}, {"ts", s.ts_ns}, {"dur", s.dur_ns}, {"args", s.args}});
  const auto all = world_.control_gather_strings(json_text(nlohmann::json{{"host", host}, {"slices", mine}}));
  if (world_.rank() != 0) return;

  reports::Trace t;
  t.ranks = world_.size();
  t.tracks = {reports::kTrackHost, reports::kTrackCompute, reports::kTrackComm};
  auto alignment = nlohmann::json::array();
  std::vector<std::int64_t> offset(all.size());
  std::int64_t worst = 0;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const auto& b = offsets_begin_[r];
    const auto& e = offsets_end[r];
    // The mean of the two alignments; its error covers both and the drift between them.
    offset[r] = b.offset_ns + (e.offset_ns - b.offset_ns) / 2;
    const std::int64_t drift = e.offset_ns - b.offset_ns;
    const std::int64_t err = std::max(b.error_ns, e.error_ns) + (std::llabs(drift) + 1) / 2;
    worst = std::max(worst, err);
    alignment.push_back({{"rank", r}, {"offset_us", static_cast<double>(offset[r]) / 1e3},
                         {"error_us", static_cast<double>(err) / 1e3},
                         {"rtt_min_us", static_cast<double>(std::min(b.rtt_ns, e.rtt_ns)) / 1e3},
                         {"drift_us", static_cast<double>(drift) / 1e3}});
  }
  std::int64_t zero = created_ns_;
  std::vector<nlohmann::json> docs;
  for (const auto& text : all) docs.push_back(nlohmann::json::parse(text));
  for (std::size_t r = 0; r < docs.size(); ++r)
    for (const auto& s : docs[r]["slices"]) zero = std::min(zero, s["ts"].get<std::int64_t>() - offset[r]);
  for (std::size_t r = 0; r < docs.size(); ++r) {
    t.process_names.push_back(fmt::format("rank {} ({})", r, docs[r].value("host", std::string("?"))));
    for (const auto& s : docs[r]["slices"]) {
      reports::TraceSlice x;
      x.name = s["name"].get<std::string>();
      x.cat = s["cat"].get<std::string>();
      x.pid = static_cast<int>(r);
      x.tid = s["tid"].get<int>();
      x.ts_ns = s["ts"].get<std::int64_t>() - offset[r] - zero;
      x.dur_ns = s["dur"].get<std::int64_t>();
      x.args = s["args"];
      t.slices.push_back(std::move(x));
    }
  }
  metadata["traced_iterations"] = iterations_;
  metadata["clock"] = "steady_clock (CLOCK_MONOTONIC) of each rank, shifted to rank 0's";
  metadata["alignment"] = alignment;
  metadata["alignment_method"] =
      "ping-pong over MPI from rank 0 at the start and the end of the run, the round trip with the smallest RTT each "
      "time; offset = their mean, error = half the larger minimal RTT plus half the drift between the two";
  metadata["alignment_error_us"] = static_cast<double>(worst) / 1e3;
  metadata["device_origin_error_us"] = origin_err / 1e3;
  metadata["zero_steady_ns_rank0"] = zero;
  spread_overlapping_requests(t);
  t.metadata = std::move(metadata);
  write_file_atomic(path, json_text(reports::to_chrome_json(t)) + "\n");
}

}  // namespace layerbench::harness
