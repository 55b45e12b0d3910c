#pragma once

#include <cstdint>

namespace graphsplit {

// The process's resident memory now and its high-water mark (VmRSS and VmHWM of /proc/self/status), in KiB;
// both 0 where the file cannot be read. For --timing: which pipeline entry grew the heap is where a large
// model's memory, and on a machine slow to clear fresh pages much of its time, goes.
struct ProcessMemory {
  int64_t resident_kb = 0;
  int64_t peak_kb = 0;
};

ProcessMemory process_memory();

}  // namespace graphsplit
