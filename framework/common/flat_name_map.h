// A map from names to small values for the importer's million-entry tables: open addressing with linear
// probing over one flat array of (hash, name, value). std::unordered_map reaches an entry through a bucket,
// the node before it and the node itself, each a cache and TLB miss on a large graph; here a lookup reads one
// slot and the name only when the full hash matches. Names are views: their owner must outlive the map. No
// erase.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

namespace graphsplit {

template <typename V>
class FlatNameMap {
 public:
  void reserve(size_t n) {
    if (n * 2 > slots_.size()) rehash(n);
  }
  size_t size() const { return size_; }

  V* find(std::string_view name) {
    if (slots_.empty()) return nullptr;
    const uint64_t h = hash(name);
    for (size_t i = h & mask(); slots_[i].used; i = (i + 1) & mask()) {
      if (slots_[i].hash == h && slots_[i].name == name) return &slots_[i].value;
    }
    return nullptr;
  }
  const V* find(std::string_view name) const { return const_cast<FlatNameMap*>(this)->find(name); }
  bool contains(std::string_view name) const { return find(name) != nullptr; }

  // Inserts (name, value) unless the name is there; returns its entry and whether it was inserted.
  std::pair<V*, bool> emplace(std::string_view name, V value) {
    if ((size_ + 1) * 2 > slots_.size()) rehash(size_ + 1);
    const uint64_t h = hash(name);
    size_t i = h & mask();
    for (; slots_[i].used; i = (i + 1) & mask()) {
      if (slots_[i].hash == h && slots_[i].name == name) return {&slots_[i].value, false};
    }
    slots_[i] = {h, name, std::move(value), true};
    ++size_;
    return {&slots_[i].value, true};
  }
  // Sets the value for `name`, inserting it if needed.
  void assign(std::string_view name, V value) {
    auto [slot, fresh] = emplace(name, value);
    if (!fresh) *slot = std::move(value);
  }

 private:
  struct Slot {
    uint64_t hash = 0;
    std::string_view name;
    V value{};
    bool used = false;
  };
  static uint64_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  size_t mask() const { return slots_.size() - 1; }
  void rehash(size_t n) {
    size_t size = 16;
    while (size < n * 2) size *= 2;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(size, Slot{});
    for (Slot& s : old) {
      if (!s.used) continue;
      size_t i = s.hash & mask();
      while (slots_[i].used) i = (i + 1) & mask();
      slots_[i] = std::move(s);
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace graphsplit
