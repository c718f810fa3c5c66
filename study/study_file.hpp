#pragma once
// The one owner of a study file while `layerbench-ab run` writes it. Opening takes an exclusive
// lock (flock): a second writer of the same file exits 2 at once and the file stays valid. An
// existing file is read and validated before anything is changed: a file that is not a study is
// never modified, and a resume with other commands, metric, order, warm-up or seed is refused.
// Only then is a torn last line (a run killed mid-write) cut off. Records are appended and
// fsync'ed one at a time, so a killed study loses at most the run in flight.
#include <nlohmann/json.hpp>
#include <string>

#include "study/study.hpp"

namespace layerbench::ab {

class StudyFile {
 public:
  // Creates the file (writing the header of `config`) or, with `resume`, continues it; throws
  // InputError for every reason to refuse. `study()` is what the file holds afterwards.
  // With `force`, an existing study (never any other file) is emptied and started afresh.
  StudyFile(const std::string& path, const StudyConfig& config, bool resume, bool force = false);
  ~StudyFile();
  StudyFile(const StudyFile&) = delete;
  StudyFile& operator=(const StudyFile&) = delete;

  bool resumed() const { return resumed_; }
  Study& study() { return study_; }
  void append(const nlohmann::json& record);
  int fd() const { return fd_; }

 private:
  std::string path_;
  int fd_ = -1;
  bool resumed_ = false;
  Study study_;
};

}  // namespace layerbench::ab
