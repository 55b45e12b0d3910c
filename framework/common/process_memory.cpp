#include "process_memory.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace graphsplit {

ProcessMemory process_memory() {
  ProcessMemory m;
  std::FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return m;
  char line[256];
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) m.resident_kb = std::strtoll(line + 6, nullptr, 10);
    if (std::strncmp(line, "VmHWM:", 6) == 0) m.peak_kb = std::strtoll(line + 6, nullptr, 10);
  }
  std::fclose(f);
  return m;
}

}  // namespace graphsplit
