// Page faults were a quarter of a million-node compile's wall time (183k faults, 1.3 s of system time of 5.2
// s on a 1M chain): the IR is built of millions of small blocks, and each 4 KiB page of them is faulted in on
// first touch. Backing tcmalloc's heap with transparent huge pages takes one fault per 2 MiB and fewer TLB
// misses for the passes' pointer chasing. Linux with THP in "madvise" mode (Debian's default) honours the
// request; elsewhere it is a no-op.
#pragma once

namespace graphsplit::apps {

// Call first thing in main, before the heap grows. Only with tcmalloc (GRAPHSPLIT_TCMALLOC): atc and omrun.
// Does nothing when the environment sets GRAPHSPLIT_NO_HUGE_HEAP (tcmalloc's own system allocator serves).
void use_huge_pages_for_heap();

}  // namespace graphsplit::apps
