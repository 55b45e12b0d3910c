// The importer's name tables: every name inserted is found with its value, names never inserted are not, a
// second insertion of a name keeps the first value, and growth keeps all of it.
#include "common/flat_name_map.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace graphsplit {
namespace {

TEST(FlatNameMapTest, AgreesWithAnOrderedMapThroughGrowth) {
  std::vector<std::string> names;
  for (int i = 0; i < 20000; ++i)
    names.push_back((i % 3 ? "value_" : "v") + std::to_string(i * 7919 % 20011));
  for (int i = 0; i < 1000; ++i) names.push_back(names[static_cast<size_t>(i * 13)]);  // again: not fresh
  FlatNameMap<int> map;  // no reserve: grows from nothing
  std::map<std::string, int> oracle;
  for (size_t i = 0; i < names.size(); ++i) {
    auto [value, fresh] = map.emplace(names[i], static_cast<int>(i));
    auto [it, oracle_fresh] = oracle.emplace(names[i], static_cast<int>(i));
    ASSERT_EQ(fresh, oracle_fresh) << names[i];
    ASSERT_EQ(*value, it->second) << names[i];
  }
  EXPECT_EQ(map.size(), oracle.size());
  for (const auto& [name, value] : oracle) {
    const int* found = map.find(name);
    ASSERT_NE(found, nullptr) << name;
    EXPECT_EQ(*found, value) << name;
  }
  EXPECT_EQ(map.find("value_"), nullptr);
  EXPECT_EQ(map.find(""), nullptr);
  EXPECT_FALSE(map.contains("v20011"));
}

// Slots keep 32 bits of the hash: two names that share them and their first slot must still be told apart by
// the names themselves. Such a pair is found by search (the map's hash, sdk::name_hash, is fixed, so the
// search is deterministic).
TEST(FlatNameMapTest, NamesSharingASlotAndTheStoredHashBitsStayApart) {
  auto key = [](const std::string& s) {
    const uint64_t h = sdk::name_hash(s);
    return (h >> 32) << 4 | (h & 15);  // the stored bits and the first slot of a 16-slot table
  };
  std::unordered_map<uint64_t, std::string> seen;
  std::string a, b;
  for (int i = 0; i < (1 << 21) && a.empty(); ++i) {
    std::string name = "k" + std::to_string(i);
    auto [it, fresh] = seen.emplace(key(name), name);
    if (!fresh) a = it->second, b = name;
  }
  ASSERT_FALSE(a.empty()) << "no pair found";
  FlatNameMap<int> map;
  EXPECT_TRUE(map.emplace(a, 1).second);
  EXPECT_EQ(map.find(b), nullptr);
  EXPECT_TRUE(map.emplace(b, 2).second);
  ASSERT_NE(map.find(a), nullptr);
  ASSERT_NE(map.find(b), nullptr);
  EXPECT_EQ(*map.find(a), 1);
  EXPECT_EQ(*map.find(b), 2);
  EXPECT_EQ(map.size(), 2u);
}

TEST(FlatNameMapTest, AssignReplacesAndReserveKeepsEntries) {
  FlatNameMap<std::string> map;
  map.assign("a", "1");
  map.assign("b", "2");
  map.assign("a", "3");
  map.reserve(100000);  // rehashes the two entries
  EXPECT_EQ(map.size(), 2u);
  ASSERT_NE(map.find("a"), nullptr);
  EXPECT_EQ(*map.find("a"), "3");
  EXPECT_EQ(*map.find("b"), "2");
  EXPECT_EQ(map.find("c"), nullptr);
}

}  // namespace
}  // namespace graphsplit
