// Disjoint sets over 0..n-1 (header only, standard library only): partitioners that know their clusters are
// connected components find them with this instead of the cluster engine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

namespace graphsplit::sdk {

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), uint32_t{0}); }

  // The set's representative: its smallest member, so that the result never depends on the order of unite().
  uint32_t find(uint32_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];  // path halving
    return x;
  }
  // Joins the sets of a and b; false when they were one already.
  bool unite(uint32_t a, uint32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return false;
    parent_[std::max(a, b)] = std::min(a, b);
    return true;
  }

 private:
  std::vector<uint32_t> parent_;
};

}  // namespace graphsplit::sdk
