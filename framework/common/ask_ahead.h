// Loops that add or look up many names in large tables (a graph's name index, the importer's value table) ask
// for each name's slot a few items before they reach it (Graph::prefetch_name, FlatNameMap::prefetch), so
// that the cache misses overlap the work on the items between. Eight items: two and eight measured alike
// (issue 21, round 18); the SDK's own loops use the same distance.
#pragma once

#include <cstddef>
#include <utility>

namespace graphsplit {

inline constexpr size_t kAskAhead = 8;

// ask(k) for the first items at once; then at(k), called as the loop reaches item k, asks for item k +
// kAskAhead.
template <class Ask>
class AskAhead {
 public:
  AskAhead(size_t items, Ask ask) : items_(items), ask_(std::move(ask)) {
    for (size_t k = 0; k < items_ && k < kAskAhead; ++k) ask_(k);
  }
  void at(size_t k) {
    if (k + kAskAhead < items_) ask_(k + kAskAhead);
  }

 private:
  size_t items_;
  Ask ask_;
};

}  // namespace graphsplit
