// Page faults were a quarter of a million-node compile's wall time (183k faults, 1.3 s of system time of 5.2
// s on a 1M chain): the IR is built of millions of small blocks, and each 4 KiB page of them is faulted in on
// first touch. Backing tcmalloc's heap with transparent huge pages takes one fault per 2 MiB and fewer TLB
// misses for the passes' pointer chasing. Linux with THP in "madvise" mode (Debian's default) honours the
// request; elsewhere it is a no-op.
//
// But a fresh huge page can cost far more than 512 small ones. A virtual machine whose balloon device has
// free page reporting hands freed 2 MiB blocks back to its host a few seconds after they are freed; touching
// such a block again makes the host fault its memory back in. On the 2 vCPU Firecracker VM of round 21 a cold
// 2 MiB page took about 5.8 ms (512 MiB touched in 1.48-1.55 s, against 0.29-0.31 s in 4 KiB pages), and
// atc's first compile after a pause was 30-40 % slower with the huge heap than without it. So the heap is
// left to tcmalloc's own allocator there (docs/atc.md).
#pragma once

#include <string>

namespace graphsplit::apps {

// Whether the heap should come from huge pages, and why (for the debug log). GRAPHSPLIT_HUGE_HEAP=1 or =0
// decides (another value is ignored, and the reason says so); GRAPHSPLIT_NO_HUGE_HEAP (any value) means 0.
// Otherwise huge pages are used unless a virtio balloon bound under `virtio_root` (normally
// /sys/bus/virtio/drivers/virtio_balloon) offers free page reporting.
struct HugeHeapChoice {
  bool use = false;
  std::string why;
  std::string log_line() const {
    return std::string("heap: huge pages ") + (use ? "on" : "off") + " (" + why + ")";
  }
};
HugeHeapChoice choose_huge_heap(const char* huge_env, const char* no_huge_env,
                                const std::string& virtio_root);

// Call first thing in main, before the heap grows. Only with tcmalloc (GRAPHSPLIT_TCMALLOC): atc and omrun.
// Does nothing unless choose_huge_heap() says so (tcmalloc's own system allocator then serves). Returns the
// choice.
HugeHeapChoice use_huge_pages_for_heap();

}  // namespace graphsplit::apps
