// tcmalloc's heap in transparent huge pages (see huge_heap.h for why).
#include "huge_heap.h"

#include <gperftools/malloc_extension.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace graphsplit::apps {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
// Address space reserved at a time. Only pages that tcmalloc touches become resident, so a large reservation
// costs nothing but addresses, and fewer reservations mean fewer partly used huge pages at their ends.
constexpr size_t kRegion = size_t{256} << 20;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

// Hands tcmalloc memory from 2 MiB-aligned regions marked MADV_HUGEPAGE. tcmalloc calls it under its own lock
// and never gives memory back to it (it releases pages with madvise), so a bump pointer is all it needs. It
// must not allocate: it runs inside malloc.
class HugePageAllocator : public SysAllocator {
 public:
  explicit HugePageAllocator(SysAllocator* fallback) : fallback_(fallback) {}

  void* Alloc(size_t size, size_t* actual_size, size_t alignment) override {
    if (size == 0 || alignment > kHugePage) return fallback_->Alloc(size, actual_size, alignment);
    size = round_up(size, alignment < 4096 ? 4096 : alignment);
    uintptr_t start = round_up(next_, alignment);
    if (next_ == 0 || start + size > end_) {
      if (!reserve(size)) return fallback_->Alloc(size, actual_size, alignment);
      start = next_;
    }
    next_ = start + size;
    if (actual_size) *actual_size = size;
    return reinterpret_cast<void*>(start);
  }

 private:
  bool reserve(size_t size) {
    const size_t want = round_up(size > kRegion ? size : kRegion, kHugePage);
    void* p = mmap(nullptr, want + kHugePage, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return false;
    const auto raw = reinterpret_cast<uintptr_t>(p);
    const uintptr_t aligned = round_up(raw, kHugePage);
    if (aligned > raw) munmap(p, aligned - raw);
    const uintptr_t tail = raw + want + kHugePage - (aligned + want);
    if (tail) munmap(reinterpret_cast<void*>(aligned + want), tail);
    // Refused where the kernel has no transparent huge pages; the memory is still good as ordinary pages.
    madvise(reinterpret_cast<void*>(aligned), want, MADV_HUGEPAGE);
    next_ = aligned;
    end_ = aligned + want;
    return true;
  }

  SysAllocator* fallback_;
  uintptr_t next_ = 0;
  uintptr_t end_ = 0;
};

// Bit 5 of a virtio device's feature string (VIRTIO_BALLOON_F_REPORTING): free page reporting.
constexpr size_t kBalloonReportingBit = 5;

// Which balloon device, if any, reports free pages to the host. Runs before the heap is set up, so it
// allocates only what the standard library needs for a few short paths and lines.
std::string reporting_balloon(const std::string& virtio_root) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(virtio_root, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("virtio", 0) != 0) continue;
    std::ifstream in(entry.path() / "features");
    std::string bits;
    if (std::getline(in, bits) && bits.size() > kBalloonReportingBit && bits[kBalloonReportingBit] == '1')
      return name;
  }
  return {};
}

}  // namespace

HugeHeapChoice choose_huge_heap(const char* huge_env, const char* no_huge_env,
                                const std::string& virtio_root) {
  const std::string_view huge = huge_env ? huge_env : "";
  if (huge == "1") return {true, "GRAPHSPLIT_HUGE_HEAP=1"};
  if (huge == "0") return {false, "GRAPHSPLIT_HUGE_HEAP=0"};
  // A value that is neither is not an error worth stopping a compile for, but the log must not hide it.
  const std::string ignored =
      huge_env ? "; GRAPHSPLIT_HUGE_HEAP='" + std::string(huge) + "' ignored: it takes 0 or 1" : "";
  if (no_huge_env) return {false, "GRAPHSPLIT_NO_HUGE_HEAP is set" + ignored};
  if (const std::string balloon = reporting_balloon(virtio_root); !balloon.empty())
    return {false, "the virtio balloon " + balloon + " reports free pages to the host" + ignored};
  return {true, "no free page reporting" + ignored};
}

HugeHeapChoice use_huge_pages_for_heap() {
  HugeHeapChoice choice =
      choose_huge_heap(std::getenv("GRAPHSPLIT_HUGE_HEAP"), std::getenv("GRAPHSPLIT_NO_HUGE_HEAP"),
                       "/sys/bus/virtio/drivers/virtio_balloon");
  if (!choice.use) return choice;
  MallocExtension* ext = MallocExtension::instance();
  SysAllocator* fallback = ext->GetSystemAllocator();
  if (!fallback) return {false, "tcmalloc has no system allocator to wrap"};
  // Lives as long as the process: tcmalloc keeps calling it until exit.
  static HugePageAllocator allocator(fallback);
  ext->SetSystemAllocator(&allocator);
  return choice;
}

}  // namespace graphsplit::apps
