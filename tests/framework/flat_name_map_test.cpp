// The importer's name tables: every name inserted is found with its value, names never inserted are not, a
// second insertion of a name keeps the first value, and growth keeps all of it.
#include "common/flat_name_map.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
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
