// Output files are written atomically: a failed or interrupted run never leaves a partial or stale file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/status.h"

namespace graphsplit {

// Writes `bytes` to a temporary file beside `path`, flushes it, and renames it over `path`.
sdk::Status write_file_atomically(const std::string& path, std::string_view bytes);
// The same, for a file made of pieces held apart (a large model's tables and graphs): no copy joins them.
sdk::Status write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces);

// Reads a whole file; the message names the path and the OS reason on failure. Files over `max_bytes` are
// refused before anything is allocated for them.
sdk::Status read_file(const std::string& path, std::string* bytes, uint64_t max_bytes = uint64_t{1} << 34);

}  // namespace graphsplit
