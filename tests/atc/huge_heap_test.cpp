// atc's heap from transparent huge pages: whatever tcmalloc asks for, small or larger than a reserved region,
// must come back usable and never overlap what it already handed out.
#include "huge_heap.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

namespace graphsplit::apps {
namespace {

TEST(HugeHeap, SmallAndHugeBlocksAreUsableAndDisjoint) {
  // Forced on, whatever this machine's balloon does: the allocator itself is what is tested.
  setenv("GRAPHSPLIT_HUGE_HEAP", "1", 1);
  const HugeHeapChoice choice = use_huge_pages_for_heap();
  unsetenv("GRAPHSPLIT_HUGE_HEAP");
  ASSERT_TRUE(choice.use) << choice.why;
  EXPECT_EQ(choice.log_line(), "heap: huge pages on (GRAPHSPLIT_HUGE_HEAP=1)");
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

// A fake /sys/bus/virtio/drivers/virtio_balloon: one device per feature string (bit 5 is free page
// reporting).
class HugeHeapChoiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("gs_balloon_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void device(const std::string& name, const std::string& features) {
    std::filesystem::create_directories(root_ / name);
    std::ofstream(root_ / name / "features") << features << "\n";
  }
  std::filesystem::path root_;
};

TEST_F(HugeHeapChoiceTest, AReportingBalloonTurnsHugePagesOff) {
  device("bind", "");                   // the driver directory's other entries are not devices
  device("virtio3", "01100001000000");  // bit 5 clear
  EXPECT_TRUE(choose_huge_heap(nullptr, nullptr, root_.string()).use);
  device("virtio0", "01100101000000");  // bit 5 set: the Firecracker VM's balloon
  const HugeHeapChoice c = choose_huge_heap(nullptr, nullptr, root_.string());
  EXPECT_FALSE(c.use);
  EXPECT_NE(c.why.find("virtio0"), std::string::npos) << c.why;
}

TEST_F(HugeHeapChoiceTest, TheEnvironmentDecidesFirst) {
  device("virtio0", "01100101");
  EXPECT_TRUE(choose_huge_heap("1", nullptr, root_.string()).use);
  EXPECT_TRUE(choose_huge_heap("1", "1", root_.string()).use);  // the explicit choice wins
  EXPECT_FALSE(choose_huge_heap("0", nullptr, (root_ / "none").string()).use);
  EXPECT_FALSE(choose_huge_heap(nullptr, "", (root_ / "none").string()).use);
  // An unreadable or missing directory, a short feature string: no reporting known, huge pages on.
  EXPECT_TRUE(choose_huge_heap(nullptr, nullptr, (root_ / "none").string()).use);
  device("short/virtio1", "0110");
  EXPECT_TRUE(choose_huge_heap(nullptr, nullptr, (root_ / "short").string()).use);
}

TEST_F(HugeHeapChoiceTest, AValueOtherThanZeroOrOneIsIgnoredAndSaidSo) {
  device("virtio0", "01100101");
  const HugeHeapChoice c = choose_huge_heap("yes", nullptr, root_.string());
  EXPECT_FALSE(c.use);  // the machine decides, as without the variable
  EXPECT_NE(c.why.find("virtio0"), std::string::npos) << c.why;
  EXPECT_NE(c.why.find("GRAPHSPLIT_HUGE_HEAP='yes' ignored"), std::string::npos) << c.why;
  const HugeHeapChoice quiet = choose_huge_heap(nullptr, nullptr, root_.string());
  EXPECT_EQ(quiet.why.find("ignored"), std::string::npos) << quiet.why;
  EXPECT_EQ(quiet.log_line(),
            "heap: huge pages off (the virtio balloon virtio0 reports free pages to the host)");
}

}  // namespace
}  // namespace graphsplit::apps
