// atc's progress line: on a terminal, once a compile has run for a couple of seconds, one line on stderr that
// says which step is running (a pipeline entry with its index and the count) and for how long, rewritten in
// place and erased at the end. Nothing when stderr is not a terminal or the log level is error or null, so
// scripts and CI logs see exactly what they saw before.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>

namespace graphsplit::atc {

class Progress {
 public:
  // `log` is atc's --log value. The delay is GRAPHSPLIT_PROGRESS_DELAY (seconds) if set, else 2.
  explicit Progress(const std::string& log);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // Starts a step; index and count are 0 outside the pipeline.
  void step(const std::string& what, size_t index = 0, size_t count = 0);
  // Erases the line (before the summary or an error is printed) and stops the display.
  void finish();

 private:
  void loop();
  void draw();

  bool enabled_ = false;
  std::chrono::duration<double> delay_{2.0};
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), step_start_ = start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string what_ = "starting";
  bool done_ = false, drawn_ = false;
  std::thread thread_;
};

}  // namespace graphsplit::atc
