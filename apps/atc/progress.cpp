#include "progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace graphsplit::atc {

Progress::Progress(const std::string& log) {
  enabled_ = isatty(STDERR_FILENO) && log != "error" && log != "null";
  if (!enabled_) return;
  if (const char* d = std::getenv("GRAPHSPLIT_PROGRESS_DELAY")) {
    char* end = nullptr;
    const double seconds = std::strtod(d, &end);
    if (end != d && seconds >= 0) delay_ = std::chrono::duration<double>(seconds);
  }
  // No delay: the first line is drawn here, so that it cannot depend on the thread getting to run before a
  // short compile ends (a loaded two-core machine once left it out).
  if (delay_.count() <= 0) {
    drawn_ = true;
    draw();
  }
  thread_ = std::thread([this] { loop(); });
}

Progress::~Progress() {
  finish();
}

void Progress::step(const std::string& what, size_t index, size_t count) {
  if (!enabled_) return;
  std::lock_guard<std::mutex> lock(mutex_);
  what_ = count ? "[" + std::to_string(index) + "/" + std::to_string(count) + "] " + what : what;
  step_start_ = std::chrono::steady_clock::now();
  if (drawn_) draw();
}

void Progress::finish() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
    if (drawn_) std::fputs("\r\x1b[K", stderr);
    drawn_ = false;
  }
  wake_.notify_all();
  thread_.join();
}

// Redraws every quarter second once the delay has passed; a step change redraws at once (step()).
void Progress::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto first = start_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(delay_);
  wake_.wait_until(lock, first, [this] { return done_; });
  while (!done_) {
    drawn_ = true;
    draw();
    wake_.wait_for(lock, std::chrono::milliseconds(250), [this] { return done_; });
  }
}

void Progress::draw() {
  using seconds = std::chrono::duration<double>;
  const auto now = std::chrono::steady_clock::now();
  std::fprintf(stderr, "\r\x1b[Katc: %.1f s: %s (%.1f s)", seconds(now - start_).count(), what_.c_str(),
               seconds(now - step_start_).count());
  std::fflush(stderr);
}

}  // namespace graphsplit::atc
