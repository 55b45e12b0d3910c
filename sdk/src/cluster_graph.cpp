#include "graphsplit/sdk/cluster_graph.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <iterator>
#include <numeric>

#include "graphsplit/sdk/ir/topo.h"

namespace graphsplit::sdk {

using Id = ClusterGraph::Id;

namespace {

// std::lower_bound over [d, d + n), without a branch per step: the cluster engine's lists are mostly short or
// hot, and a mispredicted step cost more than the whole search (a count of the ids below x, four at a time,
// was slower still).
template <class P>
P seek(P d, size_t n, Id x) {
  if (n == 0) return d;
  while (n > 1) {
    const size_t half = n / 2;
    d += half & (size_t{0} - static_cast<size_t>(d[half - 1] < x));  // a mask, not a ternary: GCC branched
    n -= half;
  }
  return d + (*d < x);
}

// A cluster's neighbours, sorted. Most clusters start as one node with one or two neighbours each way: two
// ids are kept inline (a std::vector was 24 bytes and a heap block per list, two lists per node), more in one
// heap block. A list longer than kFlatMax (a hub: a graph input that every node reads) is kept in chunks of
// at most 2 * kChunk ids, so an insert or an erase moves one chunk's tail: a flat hub list moved its whole
// tail each time one of its neighbours merged, and the engine partition of a 200k-node chain that read one
// input took 0.72 s, against 0.22 s at 100k. The order, the size and every answer are the flat list's.
class IdList {
  using Chunk = std::vector<Id>;
  struct Chunks {
    std::vector<Chunk> parts;  // none empty, at least one
  };

 public:
  // Forward iteration over either form; ends compare by position only.
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Id;
    using difference_type = std::ptrdiff_t;
    using pointer = const Id*;
    using reference = const Id&;
    Iter(const Id* p, const Id* stop, const Chunk* next, const Chunk* last)
        : p_(p), stop_(stop), next_(next), last_(last) {}
    const Id& operator*() const { return *p_; }
    Iter& operator++() {
      if (++p_ == stop_ && next_ != last_) {
        p_ = next_->data();
        stop_ = p_ + next_->size();
        ++next_;
      }
      return *this;
    }
    friend bool operator==(const Iter& a, const Iter& b) { return a.p_ == b.p_; }
    friend bool operator!=(const Iter& a, const Iter& b) { return a.p_ != b.p_; }

   private:
    const Id *p_, *stop_;
    const Chunk *next_, *last_;
  };

  IdList() : size_(0), cap_(kInline) {}
  IdList(const IdList&) = delete;
  IdList& operator=(const IdList&) = delete;
  // For std::vector's reallocation; lists are never assigned.
  IdList(IdList&& o) noexcept : size_(0), cap_(kInline) { take(o); }
  IdList& operator=(IdList&&) = delete;
  ~IdList() { release(); }

  Iter begin() const {
    if (!chunked()) return {flat(), flat() + size_, nullptr, nullptr};
    const std::vector<Chunk>& parts = big_->parts;
    const Chunk& first = parts.front();
    return {first.data(), first.data() + first.size(), parts.data() + 1, parts.data() + parts.size()};
  }
  Iter end() const {
    if (!chunked()) return {flat() + size_, nullptr, nullptr, nullptr};
    const Chunk& last = big_->parts.back();
    return {last.data() + last.size(), nullptr, nullptr, nullptr};
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool chunked() const { return cap_ == kChunked; }
  const Id* flat_ids() const { return flat(); }  // the ids of a list that is not chunked()

  std::vector<Id> to_vector() const {
    if (!chunked()) return std::vector<Id>(flat(), flat() + size_);
    std::vector<Id> v;
    v.reserve(size_);
    for (const Chunk& c : big_->parts) v.insert(v.end(), c.begin(), c.end());
    return v;
  }

  // Calls f(id) in order while it returns true; false when f stopped early. The searches loop this way: a
  // plain pointer loop over the flat list or over each chunk, where the iterator tests for a chunk's end at
  // every id.
  template <class F>
  bool visit(F&& f) const {
    if (!chunked()) {
      for (const Id *p = flat(), *e = p + size_; p != e; ++p) {
        if (!f(*p)) return false;
      }
      return true;
    }
    for (const Chunk& c : big_->parts) {
      for (Id x : c) {
        if (!f(x)) return false;
      }
    }
    return true;
  }

  bool contains(Id x) const {
    if (!chunked()) {
      const Id* it = seek(flat(), size_, x);
      return it != flat() + size_ && *it == x;
    }
    const Chunk* c = chunk_holding(x);
    return c && std::binary_search(c->begin(), c->end(), x);
  }
  void insert_sorted(Id x) {
    if (chunked()) return chunk_insert(x);
    Id* d = flat();
    const Id* it = seek(d, size_, x);
    if (it != d + size_ && *it == x) return;
    const auto at = static_cast<size_t>(it - d);
    grow(size_ + 1);
    d = flat();
    std::memmove(d + at + 1, d + at, (size_ - at) * sizeof(Id));
    d[at] = x;
    ++size_;
    if (size_ > kFlatMax) to_chunks();
  }
  void erase_sorted(Id x) {
    if (chunked()) return chunk_erase(x);
    Id* d = flat();
    Id* it = seek(d, size_, x);
    if (it == d + size_ || *it != x) return;
    std::memmove(it, it + 1, static_cast<size_t>(d + size_ - it - 1) * sizeof(Id));
    --size_;
  }
  // erase_sorted(from) then insert_sorted(to), moving only the entries between the two places: a hub's flat
  // list (a shape input feeding every Reshape) was shifted twice over its whole length per merge.
  void replace_sorted(Id from, Id to) {
    if (size_ <= 2 && !chunked() && replace_in_two(from, to)) return;
    if (chunked()) {  // from's absence changes nothing here: the flat path inserts `to` either way too
      chunk_erase(from);
      return chunk_insert(to);
    }
    Id* d = flat();
    Id* end = d + size_;
    Id* f = seek(d, size_, from);
    if (f == end || *f != from) return insert_sorted(to);
    Id* t = seek(d, size_, to);
    if (t != end && *t == to) {
      std::memmove(f, f + 1, static_cast<size_t>(end - f - 1) * sizeof(Id));
      --size_;
    } else if (f < t) {  // shift the entries between the two places by one: a memmove, not std::rotate's loop
      std::memmove(f, f + 1, static_cast<size_t>(t - f - 1) * sizeof(Id));
      *(t - 1) = to;
    } else {
      std::memmove(t + 1, t, static_cast<size_t>(f - t) * sizeof(Id));
      *t = to;
    }
  }
  // replace_sorted() for a list of one or two ids holding `from` (most lists: a node's one or two
  // neighbours), without the searches; false when `from` is absent.
  bool replace_in_two(Id from, Id to) {
    Id* d = flat();
    if (size_ == 0 || (d[0] != from && (size_ == 1 || d[1] != from))) return false;
    if (size_ == 1) {
      d[0] = to;
      return true;
    }
    const Id other = d[0] == from ? d[1] : d[0];
    if (other == to) {
      d[0] = to;
      size_ = 1;
    } else {
      d[0] = std::min(other, to);
      d[1] = std::max(other, to);
    }
    return true;
  }
  // The list becomes [first, last), which is sorted and has no repeats.
  void assign_sorted(const Id* first, const Id* last) {
    const auto n = static_cast<size_t>(last - first);
    if (chunked()) release();
    size_ = 0;
    if (n == 0) return;  // `first` may be an empty vector's null data(), which memcpy must not see
    grow(n);
    std::memcpy(flat(), first, n * sizeof(Id));
    size_ = static_cast<uint32_t>(n);
    if (size_ > kFlatMax) to_chunks();
  }
  // Building: push_back in any order, then sort_unique once (a list being built is never chunked).
  void push_back(Id x) {
    assert(!chunked());
    grow(size_ + 1);
    flat()[size_++] = x;
  }
  // A list built sorted by push_back, repeats included: without them, and in chunks if long.
  void seal() {
    assert(!chunked());
    if (size_ < 2) return;
    Id* d = flat();
    size_ = static_cast<uint32_t>(std::unique(d, d + size_) - d);
    if (size_ > kFlatMax) to_chunks();
  }
  void sort_unique() {
    assert(!chunked());
    Id* d = flat();
    if (size_ <= 8) {  // a node's few inputs: std::sort's call and setup cost more than the sort
      for (uint32_t i = 1; i < size_; ++i) {
        for (uint32_t j = i; j > 0 && d[j] < d[j - 1]; --j) std::swap(d[j], d[j - 1]);
      }
    } else {
      std::sort(d, d + size_);
    }
    seal();
  }
  // Empties the list and gives its blocks back.
  void release() {
    if (chunked())
      delete big_;
    else if (cap_ > kInline)
      delete[] heap_;
    size_ = 0;
    cap_ = kInline;
  }

 private:
  static constexpr uint32_t kInline = 2;
  static constexpr uint32_t kChunked = UINT32_MAX;  // cap_ of a list kept in chunks
  static constexpr uint32_t kFlatMax = 2048;  // a flat shift of up to 8 KiB costs less than a chunk lookup
  static constexpr size_t kChunk = 512;

  Id* flat() { return cap_ > kInline ? heap_ : inline_; }
  const Id* flat() const { return cap_ > kInline ? heap_ : inline_; }
  void grow(size_t n) {
    if (n <= cap_) return;
    const auto cap = static_cast<uint32_t>(std::max<size_t>(n, size_t{cap_} * 2));
    Id* block = new Id[cap];
    std::memcpy(block, flat(), size_ * sizeof(Id));
    if (cap_ > kInline) delete[] heap_;
    heap_ = block;
    cap_ = cap;
  }
  void take(IdList& o) {
    size_ = o.size_;
    cap_ = o.cap_;
    if (o.chunked())
      big_ = o.big_;
    else if (cap_ > kInline)
      heap_ = o.heap_;
    else
      std::memcpy(inline_, o.inline_, sizeof inline_);
    o.size_ = 0;
    o.cap_ = kInline;
  }

  void to_chunks() {
    auto* big = new Chunks;
    const Id* d = flat();
    for (size_t at = 0; at < size_; at += kChunk)
      big->parts.emplace_back(d + at, d + std::min<size_t>(size_, at + kChunk));
    const uint32_t size = size_;
    release();
    big_ = big;
    cap_ = kChunked;
    size_ = size;
  }
  // The first chunk whose last id is x or more (where x is or would go); parts.size() when x is past them
  // all.
  size_t chunk_index(Id x) const {
    const std::vector<Chunk>& parts = big_->parts;
    return static_cast<size_t>(
        std::partition_point(parts.begin(), parts.end(), [x](const Chunk& c) { return c.back() < x; }) -
        parts.begin());
  }
  const Chunk* chunk_holding(Id x) const {
    const size_t i = chunk_index(x);
    return i < big_->parts.size() ? &big_->parts[i] : nullptr;
  }
  void chunk_insert(Id x) {
    std::vector<Chunk>& parts = big_->parts;
    const size_t i = std::min(chunk_index(x), parts.size() - 1);
    Chunk& c = parts[i];
    const auto it = std::lower_bound(c.begin(), c.end(), x);
    if (it != c.end() && *it == x) return;
    c.insert(it, x);
    ++size_;
    if (c.size() > 2 * kChunk) {  // split in two halves
      Chunk upper(c.begin() + static_cast<std::ptrdiff_t>(kChunk), c.end());
      c.resize(kChunk);
      parts.insert(parts.begin() + static_cast<std::ptrdiff_t>(i) + 1, std::move(upper));
    }
  }
  void chunk_erase(Id x) {
    std::vector<Chunk>& parts = big_->parts;
    const size_t i = chunk_index(x);
    if (i == parts.size()) return;
    Chunk& c = parts[i];
    const auto it = std::lower_bound(c.begin(), c.end(), x);
    if (it == c.end() || *it != x) return;
    c.erase(it);
    --size_;
    if (!c.empty()) return;
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(i));
    if (parts.empty()) release();
  }

  union {
    Id inline_[kInline];
    Id* heap_;
    Chunks* big_;
  };
  uint32_t size_, cap_;
};
static_assert(sizeof(IdList) == 16, "the size the comment above relies on");

}  // namespace

struct ClusterGraph::Impl {
  std::vector<Node*> nodes;        // position -> node
  std::vector<uint32_t> position;  // node id -> position
  mutable std::vector<Id> parent;  // union-find over positions
  std::vector<int64_t> rank;       // per cluster: its label in the order list, consistent with every edge
  std::vector<IdList> out;         // sorted
  std::vector<IdList> in;          // sorted
  // Members as intrusive lists (next position, per-cluster head/tail/size): merging concatenates in O(1) and
  // allocates nothing.
  std::vector<uint32_t> next_member, head, tail, count;
  std::vector<char> live;
  size_t live_count = 0;
  // DFS scratch: a cluster is visited in the current search when mark == epoch.
  mutable std::vector<uint32_t> mark;
  mutable uint32_t epoch = 0;
  mutable std::vector<uint32_t> mark2;  // the backward half of a bidirectional search
  mutable uint32_t epoch2 = 0;
  mutable std::vector<Id> stack2;
  std::vector<Id> deltaf, deltab;
  mutable std::vector<Id> stack;

  Id find(Id x) const {
    Id root = x;
    while (parent[root] != root) root = parent[root];
    while (parent[x] != root) {
      Id next = parent[x];
      parent[x] = root;
      x = next;
    }
    return root;
  }

  uint32_t new_epoch() const {
    if (++epoch == 0) {  // wrapped: reset the marks once
      std::fill(mark.begin(), mark.end(), 0);
      epoch = 1;
    }
    return epoch;
  }
  uint32_t new_epoch2() const {
    if (++epoch2 == 0) {
      std::fill(mark2.begin(), mark2.end(), 0);
      epoch2 = 1;
    }
    return epoch2;
  }

  // Bidirectional search inside the rank window (rank[from], rank[to]): a forward search from `from` and a
  // backward search from `to` grow one node at a time, so the work is bounded by the smaller side. Returns
  // whether they meet; `forward_finished` says which side ran out first when they do not... or when asked to
  // run to completion (complete = true), which side completed, with its marks left in place.
  // Each step expands the side whose next cluster has fewer edges to scan, so a hub (a cluster with thousands
  // of inputs) is scanned only if the other side cannot finish first. `skip_direct` ignores the edge from ->
  // to itself (is there another path?).
  bool bidirectional(Id from, Id to, bool complete, bool* forward_finished, bool skip_direct = false) const {
    const int64_t lo = rank[from], hi = rank[to];
    const uint32_t ef = new_epoch(), eb = new_epoch2();
    stack.assign(1, from);
    stack2.assign(1, to);
    visited_f.assign(1, from);
    visited_b.assign(1, to);
    mark[from] = ef;
    mark2[to] = eb;
    bool met = false;
    while (true) {
      if (stack.empty()) {
        *forward_finished = true;
        return met;
      }
      if (stack2.empty()) {
        *forward_finished = false;
        return met;
      }
      if (out[stack.back()].size() <= in[stack2.back()].size()) {
        const Id n = stack.back();
        stack.pop_back();
        const bool stopped = !out[n].visit([&](Id w) {
          if (w == to && skip_direct && n == from) return true;
          if (w == to || mark2[w] == eb) {
            met = true;
            if (!complete) return false;
          }
          if (w != to && mark[w] != ef && rank[w] < hi) {
            mark[w] = ef;
            stack.push_back(w);
            visited_f.push_back(w);
          }
          return true;
        });
        if (stopped) return true;
      } else {
        const Id n = stack2.back();
        stack2.pop_back();
        const bool stopped = !in[n].visit([&](Id w) {
          if (w == from && skip_direct && n == to) return true;
          if (w == from || mark[w] == ef) {
            met = true;
            if (!complete) return false;
          }
          if (w != from && mark2[w] != eb && rank[w] > lo) {
            mark2[w] = eb;
            stack2.push_back(w);
            visited_b.push_back(w);
          }
          return true;
        });
        if (stopped) return true;
      }
    }
  }
  mutable std::vector<Id> visited_f, visited_b;  // what each side of the last bidirectional search marked

  // Every cluster on a path from `from` to `to`, both included, sorted; empty when there is no path.
  std::vector<Id> on_paths(Id from, Id to) const {
    if (from == to || rank[from] > rank[to]) return {};
    bool forward_finished = false;
    if (!bidirectional(from, to, true, &forward_finished)) return {};
    // The finished side holds every cluster that side can reach in the window; the path set is the part of it
    // that reaches the other endpoint, decided inside that side alone (in rank order, each cluster looks at
    // its own edges), so a hub endpoint is never scanned.
    std::vector<Id> result;
    auto by_rank = [&](Id x, Id y) { return rank[x] < rank[y]; };
    if (forward_finished) {
      const uint32_t ef = epoch, ep = new_epoch2();  // mark2 == ep: on a path to `to`
      std::vector<Id> side = visited_f;
      std::sort(side.begin(), side.end(), by_rank);
      mark2[to] = ep;
      result.push_back(to);
      for (auto it = side.rbegin(); it != side.rend(); ++it) {
        for (Id w : out[*it]) {
          if (w == to || (mark[w] == ef && mark2[w] == ep)) {
            mark2[*it] = ep;
            result.push_back(*it);
            break;
          }
        }
      }
    } else {
      const uint32_t eb = epoch2, ep = new_epoch();  // mark == ep: reached from `from`
      std::vector<Id> side = visited_b;
      std::sort(side.begin(), side.end(), by_rank);
      mark[from] = ep;
      result.push_back(from);
      for (Id x : side) {
        for (Id w : in[x]) {
          if (w == from || (mark2[w] == eb && mark[w] == ep)) {
            mark[x] = ep;
            result.push_back(x);
            break;
          }
        }
      }
    }
    std::sort(result.begin(), result.end());
    return result;
  }

  void remove_edge(Id x, Id y) {
    out[x].erase_sorted(y);
    in[y].erase_sorted(x);
  }

  bool reachable(Id from, Id to) const {
    if (from == to || rank[from] > rank[to]) return false;
    bool forward_finished = false;
    return bidirectional(from, to, false, &forward_finished);
  }

  // ---- the order: live clusters in a doubly linked list carrying gapped labels (`rank`), so a block of
  // clusters can move next to another in O(block) and keep comparisons O(1) (order maintenance).
  static constexpr int64_t kSpacing = int64_t{1} << 20;
  std::vector<Id> prev, next;
  Id first_live = kNone, last_live = kNone;

  void unlink(Id c) {
    (prev[c] == kNone ? first_live : next[prev[c]]) = next[c];
    (next[c] == kNone ? last_live : prev[next[c]]) = prev[c];
    prev[c] = next[c] = kNone;
  }
  void link_after(Id at, Id c) {  // at == kNone: at the front
    prev[c] = at;
    next[c] = at == kNone ? first_live : next[at];
    (at == kNone ? first_live : next[at]) = c;
    (next[c] == kNone ? last_live : prev[next[c]]) = c;
  }
  // Puts `block` (already unlinked, in order) right after `at` (kNone: at the front) and labels it,
  // relabelling a neighbourhood that has grown too dense (or, rarely, the whole list).
  void insert_block_after(Id at, const std::vector<Id>& block) {
    if (block.empty()) return;
    Id after = at;
    for (Id c : block) {
      link_after(after, c);
      after = c;
    }
    // Grow a neighbourhood around the block until its labels leave room for every member.
    Id left = prev[block.front()], right = next[block.back()];
    size_t count = block.size();
    for (size_t want = 2 * block.size() + 2;; want *= 2) {
      const int64_t lo = left == kNone ? -kSpacing : rank[left];
      const int64_t hi = right == kNone ? lo + kSpacing * static_cast<int64_t>(count + 2) : rank[right];
      if (hi - lo > static_cast<int64_t>(count + 1) * 64 || (left == kNone && right == kNone)) {
        const int64_t step = std::max<int64_t>((hi - lo) / static_cast<int64_t>(count + 1), 1);
        int64_t label = lo;
        for (Id c = left == kNone ? first_live : next[left]; c != right; c = next[c]) rank[c] = label += step;
        return;
      }
      for (; count < want && (left != kNone || right != kNone); ++count) {
        if (left != kNone && (right == kNone || count % 2 == 0))
          left = prev[left];
        else
          right = next[right];
      }
    }
  }

  // Folds every cluster of `set` (sorted by id) into one. The caller guarantees the set is convex (no path
  // leaves it and comes back). One order update covers the whole fold: searching forward from the set inside
  // its rank window [lo, hi] finds F, the clusters it reaches there; searching backward finds B, those
  // reaching it. The two searches run in lockstep and the first to finish wins: with F, the merged cluster
  // takes the place of the last member and F moves right after it; with B, the merged cluster takes the place
  // of the first member and B moves right before it. Every other cluster keeps its place, and every edge
  // stays forward (docs/partitioning.md). Cost: twice the smaller side plus the absorbed clusters' degrees.
  // `searched`: the members are a pair whose bidirectional() search just ended without meeting, so the side
  // it finished (forward_finished) holds exactly F or B plus its own endpoint, and fold() need not search
  // again.
  Id fold(const std::vector<Id>& set, const bool* searched = nullptr) {
    Id survivor = set.front(), first_c = set.front(), last_c = set.front();
    for (Id c : set) {
      const size_t deg = in[c].size() + out[c].size(), best = in[survivor].size() + out[survivor].size();
      if (deg > best || (deg == best && c < survivor)) survivor = c;
      if (rank[c] < rank[first_c]) first_c = c;
      if (rank[c] > rank[last_c]) last_c = c;
    }
    const uint32_t em = new_epoch2();  // members
    for (Id c : set) mark2[c] = em;
    if (set.size() == 2 && next[first_c] == last_c) {
      // Neighbours in the order (a chain's every merge): nothing lies between them, so nothing moves, and
      // the survivor takes their place.
      reorder_fold(set, survivor, last_c, {}, true);
      absorb(set, survivor, em);
      return survivor;
    }
    const bool forward_done =
        searched ? take_search(*searched, em) : search_window(set, rank[first_c], rank[last_c], em);
    std::vector<Id>& moved = forward_done ? deltaf : deltab;
    std::sort(moved.begin(), moved.end(), [&](Id x, Id y) { return rank[x] < rank[y]; });
    reorder_fold(set, survivor, forward_done ? last_c : first_c, moved, forward_done);
    absorb(set, survivor, em);
    return survivor;
  }

  // The lockstep searches from the members inside the rank window (lo, hi): true when the forward one (F, in
  // deltaf) finished first, false for the backward one (B, in deltab). Both start from the members themselves
  // (expanding a member scans its edges, so a hub member is scanned only when its side is the cheaper one);
  // members found again are skipped, and only non-members count. Convexity keeps F and B disjoint, so one
  // mark serves both.
  bool search_window(const std::vector<Id>& set, int64_t lo, int64_t hi, uint32_t em) {
    const uint32_t ev = new_epoch();  // found by either search
    deltab.clear();
    deltaf.clear();
    stack.assign(set.begin(), set.end());
    stack2.assign(set.begin(), set.end());
    while (true) {
      if (stack.empty()) return true;
      if (stack2.empty()) return false;
      const bool forward = out[stack.back()].size() <= in[stack2.back()].size();
      std::vector<Id>& st = forward ? stack : stack2;
      const Id n = st.back();
      st.pop_back();
      if (mark2[n] != em) (forward ? deltaf : deltab).push_back(n);
      (forward ? out[n] : in[n]).visit([&](Id w) {
        if (mark2[w] != em && mark[w] != ev && (forward ? rank[w] < hi : rank[w] > lo)) {
          mark[w] = ev;
          st.push_back(w);
        }
        return true;
      });
    }
  }

  // F or B from the last bidirectional() search of the pair: its finished side without the pair itself (the
  // side's own endpoint is the only member it holds; it never adds the other one).
  bool take_search(bool forward_finished, uint32_t em) {
    std::vector<Id>& side = forward_finished ? deltaf : deltab;
    side.clear();
    for (Id c : forward_finished ? visited_f : visited_b) {
      if (mark2[c] != em) side.push_back(c);
    }
    return forward_finished;
  }

  // The survivor takes `place`'s position and label; the other members leave the order, and `moved` (F or B,
  // in rank order) goes right after the survivor (F) or right before it (B).
  void reorder_fold(const std::vector<Id>& set, Id survivor, Id place, const std::vector<Id>& moved,
                    bool forward) {
    if (survivor != place) {
      unlink(survivor);
      const Id before = prev[place];
      const int64_t label = rank[place];
      unlink(place);
      link_after(before, survivor);
      rank[survivor] = label;
    }
    for (Id c : set) {
      if (c != survivor && c != place) unlink(c);  // `place` is out already
    }
    for (Id c : moved) unlink(c);
    insert_block_after(forward ? survivor : prev[survivor], moved);
  }

  // Adjacency and membership: neighbours of absorbed clusters now point at the survivor; edges inside the set
  // vanish; the absorbed clusters' members join the survivor's list.
  void absorb(const std::vector<Id>& set, Id survivor, uint32_t em) {
    std::vector<Id>& new_in = scratch_in;
    std::vector<Id>& new_out = scratch_out;
    new_in.clear();
    new_out.clear();
    // Whether the survivor's own lists name a member (an edge between it and an absorbed cluster, seen from
    // the other end): when not, nothing needs taking out of them.
    bool in_has_member = false, out_has_member = false;
    for (Id c : set) {
      if (c == survivor) continue;
      in[c].visit([&](Id p) {
        if (mark2[p] != em) {
          out[p].replace_sorted(c, survivor);
          new_in.push_back(p);
        } else {
          out_has_member = out_has_member || p == survivor;
        }
        return true;
      });
      out[c].visit([&](Id q) {
        if (mark2[q] != em) {
          in[q].replace_sorted(c, survivor);
          new_out.push_back(q);
        } else {
          in_has_member = in_has_member || q == survivor;
        }
        return true;
      });
      in[c].release();
      out[c].release();
      parent[c] = survivor;
      live[c] = 0;
      --live_count;
      next_member[tail[survivor]] = head[c];
      tail[survivor] = tail[c];
      count[survivor] += count[c];
      count[c] = 0;
      first[survivor] = std::min(first[survivor], first[c]);
    }
    rebuild_edges(set, survivor, in[survivor], new_in, in_has_member, em);
    rebuild_edges(set, survivor, out[survivor], new_out, out_has_member, em);
  }

  // The survivor's list without the members, joined with `added` (no members, sorted per absorbed cluster).
  // A few additions to a long list (a hub) go in one by one; otherwise one merge pass into scratch, which
  // allocates nothing once the scratch has grown (std::inplace_merge took a buffer per call).
  void rebuild_edges(const std::vector<Id>& set, Id survivor, IdList& own, std::vector<Id>& added,
                     bool has_member, uint32_t em) {
    if (set.size() > 2) std::sort(added.begin(), added.end());  // one absorbed cluster's list is sorted
    if (added.empty() && !has_member) return;
    if (added.size() * 4 < own.size()) {
      for (Id c : set) {
        if (has_member && c != survivor) own.erase_sorted(c);
      }
      for (Id x : added) own.insert_sorted(x);
      return;
    }
    const size_t need = own.size() + added.size();
    if (flat_merge_cap < need) {  // grown, never value-initialised: a resize per merge zeroed it each time
      flat_merge_cap = std::max(need, 2 * flat_merge_cap);
      flat_merge.reset(new Id[flat_merge_cap]);
    }
    // A hub's list in chunks merges from a flat copy: it gets here only with hundreds of additions.
    const std::vector<Id> chunked = own.chunked() ? own.to_vector() : std::vector<Id>();
    const Id* a = own.chunked() ? chunked.data() : own.flat_ids();
    const size_t n = has_member ? merge_flat<true>(a, a + own.size(), added, em)
                                : merge_flat<false>(a, a + own.size(), added, em);
    own.assign_sorted(flat_merge.get(), flat_merge.get() + n);
  }
  // The survivor's list [a, a_end) without the members, joined with `added`, into flat_merge's first n ids (n
  // returned), without a data-dependent branch: which list an id comes from, whether it repeats and whether
  // it is a member are counted, not tested. The branches of a plain merge were the cluster engine's most
  // mispredicted ones.
  template <bool kHasMember>
  size_t merge_flat(const Id* a, const Id* a_end, const std::vector<Id>& added, uint32_t em) {
    const Id *b = added.data(), *b_end = b + added.size();
    Id* w = flat_merge.get();
    size_t k = 0;
    Id last = kNone;  // never an id
    auto put = [&](Id v) {
      w[k] = v;
      bool keep = v != last;
      if constexpr (kHasMember) keep = keep & (mark2[v] != em);
      k += keep;
      last = v;
    };
    while (a != a_end && b != b_end) {
      const Id x = *a, y = *b;
      const bool from_a = x <= y;
      a += from_a;
      b += !from_a;
      put(std::min(x, y));
    }
    for (; a != a_end; ++a) put(*a);
    for (; b != b_end; ++b) put(*b);
    return k;
  }

  // A neighbour list in rank order. Most lists hold one or two clusters: no std::sort call for them.
  void in_rank_order(const IdList& list, std::vector<Id>* out) const {
    out->clear();
    list.visit([&](Id x) {
      out->push_back(x);
      return true;
    });
    const auto by_rank = [&](Id a, Id b) { return rank[a] < rank[b]; };
    if (out->size() == 2) {
      if (by_rank((*out)[1], (*out)[0])) std::swap((*out)[0], (*out)[1]);
    } else if (out->size() > 2) {
      std::sort(out->begin(), out->end(), by_rank);
    }
  }

  std::vector<Id> scratch_in, scratch_out;
  std::unique_ptr<Id[]> flat_merge;
  size_t flat_merge_cap = 0;
  std::vector<Id> pair;         // try_merge's set, kept to avoid an allocation per merge
  std::vector<uint32_t> first;  // per cluster: its first member's position
};

ClusterGraph::ClusterGraph(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ClusterGraph::~ClusterGraph() = default;

Status ClusterGraph::build(const Graph& graph, std::unique_ptr<ClusterGraph>* out) {
  auto m = std::make_unique<Impl>();
  m->nodes = graph.node_list();
  const size_t n = m->nodes.size();
  m->position.assign(graph.id_bound(), UINT32_MAX);
  for (size_t i = 0; i < n; ++i) m->position[m->nodes[i]->id()] = static_cast<uint32_t>(i);
  m->parent.resize(n);
  std::iota(m->parent.begin(), m->parent.end(), 0);
  m->out.resize(n);
  m->in.resize(n);
  m->next_member.assign(n, UINT32_MAX);
  m->head.resize(n);
  m->tail.resize(n);
  m->count.assign(n, 1);
  m->live.assign(n, 1);
  m->live_count = n;
  m->mark.assign(n, 0);
  m->mark2.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    m->head[i] = m->tail[i] = static_cast<uint32_t>(i);
    const Node* node = m->nodes[i];
    // Successor lists grow in node order, so they come out sorted; a repeat can only follow itself, and
    // seal() drops it (a test here per edge was a mispredicted branch per producer).
    IdList& in = m->in[i];
    auto link = [&](const Node* src) {
      const Id s = m->position[src->id()];
      m->out[s].push_back(static_cast<Id>(i));
      in.push_back(s);
    };
    for (const OutPort& p : node->inputs()) {
      if (p.node) link(p.node);
    }
    if (node->any_control_edges()) {
      for (const Node* c : node->control_inputs()) link(c);
    }
    if (in.size() >= 2) in.sort_unique();
  }
  for (IdList& succ : m->out) succ.seal();
  // Ranks: the node order when it is topological (the usual case: partitioners sort first), else a
  // topological order of the graph.
  bool ordered = true;
  for (size_t i = 0; i < n && ordered; ++i) {
    for (Id p : m->in[i]) ordered = ordered && p < i;
  }
  m->rank.resize(n);
  if (ordered) {
    for (size_t r = 0; r < n; ++r) m->rank[r] = static_cast<int64_t>(r);
  } else {
    std::vector<Node*> order;
    GS_RETURN_IF_ERROR(sdk::topological_order(graph, TopoSortMode::kStableRDFS, &order));
    for (size_t r = 0; r < n; ++r) m->rank[m->position[order[r]->id()]] = static_cast<int64_t>(r);
  }
  // The list in rank order, labels spaced out.
  std::vector<Id> by_rank(n);
  for (size_t c = 0; c < n; ++c) by_rank[static_cast<size_t>(m->rank[c])] = static_cast<Id>(c);
  m->prev.assign(n, kNone);
  m->next.assign(n, kNone);
  for (size_t r = 0; r < n; ++r) {
    const Id c = by_rank[r];
    m->rank[c] = static_cast<int64_t>(r + 1) * Impl::kSpacing;
    if (r > 0) {
      m->prev[c] = by_rank[r - 1];
      m->next[by_rank[r - 1]] = c;
    }
  }
  if (n > 0) {
    m->first_live = by_rank.front();
    m->last_live = by_rank.back();
  }
  m->first.resize(n);
  std::iota(m->first.begin(), m->first.end(), 0);
  *out = std::unique_ptr<ClusterGraph>(new ClusterGraph(std::move(m)));
  return Status::ok();
}

size_t ClusterGraph::num_clusters() const {
  return impl_->live_count;
}
bool ClusterGraph::is_live(Id c) const {
  return c < impl_->live.size() && impl_->live[c];
}
ClusterGraph::Id ClusterGraph::cluster_of(const Node* node) const {
  return impl_->find(impl_->position.at(node->id()));
}
ClusterGraph::Id ClusterGraph::cluster_of_position(size_t p) const {
  return impl_->find(static_cast<Id>(p));
}
size_t ClusterGraph::size(Id c) const {
  return impl_->count[c];
}
int64_t ClusterGraph::rank(Id c) const {
  return impl_->rank[c];
}
bool ClusterGraph::has_edge(Id from, Id to) const {
  return impl_->out[from].contains(to);
}

size_t ClusterGraph::num_successors(Id c) const {
  return impl_->out[c].size();
}
size_t ClusterGraph::num_predecessors(Id c) const {
  return impl_->in[c].size();
}

std::vector<Node*> ClusterGraph::members(Id c) const {
  std::vector<uint32_t> p;
  p.reserve(impl_->count[c]);
  for (uint32_t i = impl_->head[c]; i != UINT32_MAX; i = impl_->next_member[i]) p.push_back(i);
  std::sort(p.begin(), p.end());
  std::vector<Node*> out;
  out.reserve(p.size());
  for (uint32_t i : p) out.push_back(impl_->nodes[i]);
  return out;
}

std::vector<ClusterGraph::Id> ClusterGraph::successors(Id c) const {
  std::vector<Id> v;
  successors(c, &v);
  return v;
}

std::vector<ClusterGraph::Id> ClusterGraph::predecessors(Id c) const {
  std::vector<Id> v;
  predecessors(c, &v);
  return v;
}

void ClusterGraph::successors(Id c, std::vector<Id>* out) const {
  impl_->in_rank_order(impl_->out[c], out);
}

void ClusterGraph::predecessors(Id c, std::vector<Id>* out) const {
  impl_->in_rank_order(impl_->in[c], out);
}

std::vector<ClusterGraph::Id> ClusterGraph::topological_order() const {
  std::vector<Id> v;
  v.reserve(impl_->live_count);
  for (Id c = impl_->first_live; c != kNone; c = impl_->next[c]) v.push_back(c);
  return v;
}

Node* ClusterGraph::first_member(Id c) const {
  return impl_->nodes[impl_->first[c]];
}

bool ClusterGraph::reachable(Id from, Id to) const {
  return impl_->reachable(from, to);
}

ClusterGraph::Id ClusterGraph::try_merge(Id a, Id b) {
  if (a == b) return a;
  Impl& m = *impl_;
  if (m.rank[a] > m.rank[b]) std::swap(a, b);  // a before b
  bool searched = true, forward_finished = false;
  if (m.out[a].contains(b)) {
    // The edge must be the only path. Another one would leave a by another successor and enter b by another
    // predecessor, so when either side has only this edge (a chain's every merge) there is nothing to search.
    searched = m.out[a].size() != 1 && m.in[b].size() != 1;
    if (searched && m.bidirectional(a, b, false, &forward_finished, /*skip_direct=*/true)) return kNone;
  } else if (m.bidirectional(a, b, false, &forward_finished)) {
    return kNone;  // b cannot reach a (a comes first in the order): a search from a that meets b refuses
  }
  m.pair.assign({std::min(a, b), std::max(a, b)});
  return m.fold(m.pair, searched ? &forward_finished : nullptr);
}

ClusterGraph::Id ClusterGraph::merge_all_paths(Id from, Id to) {
  if (from == to) return from;
  Impl& m = *impl_;
  if (m.rank[from] > m.rank[to]) std::swap(from, to);
  const bool edge = m.out[from].contains(to);
  // Unrelated (no cycle possible), or joined only by their edge: it is the source's only way out or the
  // target's only way in. Either way the pair is the whole set.
  if ((!edge && !m.reachable(from, to)) || (edge && (m.out[from].size() == 1 || m.in[to].size() == 1))) {
    m.pair.assign({std::min(from, to), std::max(from, to)});
    return m.fold(m.pair);
  }
  return m.fold(m.on_paths(from, to));
}

Status ClusterGraph::check_invariants() const {
  const Impl& m = *impl_;
  std::vector<uint32_t> indeg(m.live.size(), 0);
  size_t live = 0;
  for (Id c = 0; c < m.live.size(); ++c) {
    if (!m.live[c]) {
      if (!m.out[c].empty() || !m.in[c].empty())
        return Status::internal("cluster graph: a merged cluster keeps edges");
      continue;
    }
    ++live;
    for (Id s : m.out[c]) {
      if (!m.live[s]) return Status::internal("cluster graph: an edge points at a merged cluster");
      if (m.rank[c] >= m.rank[s])
        return Status::internal("cluster graph: an edge goes against the rank order");
      if (!m.in[s].contains(c)) return Status::internal("cluster graph: an edge is not mirrored");
      ++indeg[s];
    }
  }
  if (live != m.live_count) return Status::internal("cluster graph: live count is off");
  size_t listed = 0;
  for (Id c = m.first_live; c != kNone; c = m.next[c], ++listed) {
    if (!m.live[c] || listed > live) return Status::internal("cluster graph: the order list is off");
    if (m.next[c] != kNone && (m.prev[m.next[c]] != c || m.rank[m.next[c]] <= m.rank[c]))
      return Status::internal("cluster graph: the order list's labels do not increase");
  }
  if (listed != live) return Status::internal("cluster graph: the order list misses a cluster");
  std::vector<Id> ready;
  for (Id c = 0; c < m.live.size(); ++c) {
    if (m.live[c] && indeg[c] == 0) ready.push_back(c);
  }
  size_t sorted = 0;
  while (!ready.empty()) {
    const Id c = ready.back();
    ready.pop_back();
    ++sorted;
    for (Id s : m.out[c]) {
      if (--indeg[s] == 0) ready.push_back(s);
    }
  }
  if (sorted != live) return Status::internal("cluster graph: the quotient graph has a cycle");
  // Every node's cluster is live and lists it.
  for (size_t p = 0; p < m.nodes.size(); ++p) {
    if (!m.live[m.find(static_cast<Id>(p))])
      return Status::internal("cluster graph: a node maps to a merged cluster");
  }
  return Status::ok();
}

}  // namespace graphsplit::sdk
