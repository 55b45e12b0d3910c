// Output files are written atomically: a failed or interrupted run never leaves a partial or stale file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/status.h"

namespace graphsplit {

// A file written by appending and made visible only by commit(): until then it is a temporary file beside
// its path, removed if the writer goes away uncommitted (a failed write leaves neither a partial nor a
// stale file). For output too large to hold in memory before writing it.
class AtomicFile {
 public:
  AtomicFile() = default;
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  ~AtomicFile();

  sdk::Status open(const std::string& path);
  // Several pieces go out in one system call (a model's subgraphs are tens of thousands of pieces).
  sdk::Status append(const std::vector<std::string_view>& pieces);
  sdk::Status append(std::string_view bytes) { return append(std::vector<std::string_view>{bytes}); }
  // Flushes the file and renames it over the path.
  sdk::Status commit();

 private:
  void discard();
  std::string path_, tmp_;
  int fd_ = -1;
};

// Writes `bytes` to a temporary file beside `path`, flushes it, and renames it over `path`.
sdk::Status write_file_atomically(const std::string& path, std::string_view bytes);
// The same, for a file made of pieces held apart (a large model's tables and graphs): no copy joins them.
sdk::Status write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces);

// Reads a whole file; the message names the path and the OS reason on failure. Files over `max_bytes` are
// refused before anything is allocated for them.
sdk::Status read_file(const std::string& path, std::string* bytes, uint64_t max_bytes = uint64_t{1} << 34);

}  // namespace graphsplit
