// A map from names to small values for the importer's million-entry tables: open addressing with linear
// probing over one flat array of 8-byte slots (32 bits of the name's hash and the entry's position), the
// entries themselves in insertion order in a second array. std::unordered_map reaches an entry through a
// bucket, the node before it and the node itself, each a cache and TLB miss on a large graph; here a lookup
// reads one slot, and the entry only when 32 bits of the hash match. Slots with the entries inline took 48
// bytes each at a load of at most one half (192 MB for a million-node model's two tables, at the import's
// peak); the slots here are 8 bytes. Names are views: their owner must outlive the map. No erase.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "graphsplit/sdk/strings.h"

namespace graphsplit {

template <typename V>
class FlatNameMap {
 public:
  void reserve(size_t n) {
    entries_.reserve(n);
    if (n * 2 > slots_.size()) rehash(n);
  }
  size_t size() const { return entries_.size(); }

  V* find(std::string_view name) {
    if (slots_.empty()) return nullptr;
    const size_t i = probe(name, hash(name));
    return slots_[i] ? &entries_[position(slots_[i])].second : nullptr;
  }
  const V* find(std::string_view name) const { return const_cast<FlatNameMap*>(this)->find(name); }
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  // A hint that `name` is about to be inserted or looked up: its first slot is fetched into the cache, so
  // that a caller knowing names a few steps ahead overlaps the miss with the steps between.
  void prefetch(std::string_view name) const {
    if (slots_.empty()) return;
    const uint64_t* slot = &slots_[hash(name) & mask()];
    __builtin_prefetch(slot);
    // GCC counts a prefetch as free of side effects: a function that only prefetches is found pure and calls
    // to it are dropped (the importer's were, until this). The empty asm, which may read the slot, keeps
    // them.
    asm volatile("" : : "r"(slot));
  }

  // Inserts (name, value) unless the name is there; returns its entry and whether it was inserted. The
  // pointer is valid until the next insertion.
  std::pair<V*, bool> emplace(std::string_view name, V value) {
    if ((size() + 1) * 2 > slots_.size()) rehash(size() + 1);
    const uint64_t h = hash(name);
    const size_t i = probe(name, h);
    if (slots_[i]) return {&entries_[position(slots_[i])].second, false};
    slots_[i] = (tag_of(h) << 32) | (entries_.size() + 1);
    entries_.emplace_back(name, std::move(value));
    return {&entries_.back().second, true};
  }
  // Sets the value for `name`, inserting it if needed.
  void assign(std::string_view name, V value) {
    auto [slot, fresh] = emplace(name, value);
    if (!fresh) *slot = std::move(value);
  }

 private:
  using Entry = std::pair<std::string_view, V>;
  // A slot: the hash's upper 32 bits, then 1 + the entry's position (0: empty).
  static uint64_t tag_of(uint64_t h) { return h >> 32; }
  static uint64_t tag(uint64_t slot) { return slot >> 32; }
  static size_t position(uint64_t slot) { return static_cast<size_t>(slot & 0xFFFFFFFFu) - 1; }
  static uint64_t hash(std::string_view s) { return sdk::name_hash(s); }
  size_t mask() const { return slots_.size() - 1; }
  // The slot holding `name`, or the empty slot where it would go.
  size_t probe(std::string_view name, uint64_t h) const {
    size_t i = h & mask();
    while (slots_[i] && (tag(slots_[i]) != tag_of(h) || entries_[position(slots_[i])].first != name))
      i = (i + 1) & mask();
    return i;
  }
  void rehash(size_t n) {
    size_t size = 16;
    while (size < n * 2) size *= 2;
    slots_.assign(size, 0);
    for (size_t k = 0; k < entries_.size(); ++k) {
      const uint64_t h = hash(entries_[k].first);
      size_t i = h & mask();
      while (slots_[i]) i = (i + 1) & mask();
      slots_[i] = (tag_of(h) << 32) | (k + 1);
    }
  }

  std::vector<uint64_t> slots_;
  std::vector<Entry> entries_;
};

}  // namespace graphsplit
