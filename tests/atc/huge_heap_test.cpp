// atc's heap from transparent huge pages: whatever tcmalloc asks for, small or larger than a reserved region,
// must come back usable and never overlap what it already handed out.
#include "huge_heap.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace graphsplit::apps {
namespace {

TEST(HugeHeap, SmallAndHugeBlocksAreUsableAndDisjoint) {
  use_huge_pages_for_heap();
  std::vector<std::unique_ptr<uint8_t[]>> blocks;
  std::vector<size_t> sizes;
  // Sizes from a few bytes to more than one 256 MiB region, so that every path of the allocator is taken:
  // a fit in the current region, a fresh region, and a region sized for one request.
  for (size_t size : {size_t{24}, size_t{4096}, size_t{1} << 20, size_t{3} << 20, size_t{300} << 20,
                      size_t{40} << 20, size_t{200} << 20, size_t{512}}) {
    blocks.emplace_back(new uint8_t[size]);
    sizes.push_back(size);
    std::memset(blocks.back().get(), static_cast<int>(blocks.size()), size);
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    const uint8_t want = static_cast<uint8_t>(i + 1);
    // First, middle and last byte: a block overlapping another would have been overwritten by its memset.
    EXPECT_EQ(blocks[i][0], want) << "block " << i;
    EXPECT_EQ(blocks[i][sizes[i] / 2], want) << "block " << i;
    EXPECT_EQ(blocks[i][sizes[i] - 1], want) << "block " << i;
  }
}

}  // namespace
}  // namespace graphsplit::apps
