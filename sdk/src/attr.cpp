#include "graphsplit/sdk/ir/attr.h"

#include <array>
#include <cstring>
#include <deque>
#include <mutex>
#include <ostream>
#include <unordered_map>

#include "interned.h"

namespace graphsplit::sdk {

namespace {

// One table per vocabulary (attribute names, op types), each string stored once and never freed or moved.
class InternTable {
 public:
  const std::string* intern(std::string_view text) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(text);
    if (it != index_.end()) return it->second;
    const std::string* s = &strings_.emplace_back(text);
    index_.emplace(std::string_view(*s), s);
    return s;
  }

 private:
  std::mutex mutex_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, const std::string*> index_;
};

// Most names come from the same few string literals again and again: a per-thread cache by address finds
// them without the lock. The content is compared too, since a buffer may be reused for another name.
// Names read from a file (an importer's op types) sit at a new address each time: a second cache, by a
// cheap digest of the content, finds them without the lock and the table's full hash.
template <int Table>
const std::string* intern_cached(InternTable& table, std::string_view text) {
  struct Hit {
    const char* data = nullptr;
    const std::string* interned = nullptr;
  };
  struct Caches {  // one thread-local block: each one is a call to find
    std::array<Hit, 64> by_address;
    std::array<const std::string*, 64> by_content{};
  };
  thread_local Caches caches;
  Hit& hit = caches.by_address[(reinterpret_cast<uintptr_t>(text.data()) >> 3) % caches.by_address.size()];
  if (hit.data == text.data() && hit.interned && *hit.interned == text) return hit.interned;
  const size_t digest = text.empty() ? 0
                                     : text.size() * 31 + static_cast<unsigned char>(text.front()) * 7 +
                                           static_cast<unsigned char>(text.back());
  const std::string*& known = caches.by_content[digest % caches.by_content.size()];
  const std::string* s = known && *known == text ? known : table.intern(text);
  known = s;
  hit = {text.data(), s};
  return s;
}

InternTable& attr_keys() {
  static InternTable* table = new InternTable;  // never destroyed: keys may be read during static destruction
  return *table;
}

InternTable& op_types() {
  static InternTable* table = new InternTable;
  return *table;
}

}  // namespace

const std::string* intern_op_type(std::string_view type) {
  return intern_cached<1>(op_types(), type);
}

AttrKey::AttrKey(std::string_view name) : name_(intern_cached<0>(attr_keys(), name)) {}

std::ostream& operator<<(std::ostream& os, AttrKey key) {
  return os << key.str();
}

std::string_view to_string(AttrValue::Kind kind) {
  switch (kind) {
    case AttrValue::Kind::kNone:
      return "none";
    case AttrValue::Kind::kInt:
      return "int";
    case AttrValue::Kind::kFloat:
      return "float";
    case AttrValue::Kind::kString:
      return "string";
    case AttrValue::Kind::kBool:
      return "bool";
    case AttrValue::Kind::kInts:
      return "ints";
    case AttrValue::Kind::kFloats:
      return "floats";
    case AttrValue::Kind::kStrings:
      return "strings";
    case AttrValue::Kind::kBools:
      return "bools";
    case AttrValue::Kind::kTensor:
      return "tensor";
    case AttrValue::Kind::kTensors:
      return "tensors";
    case AttrValue::Kind::kGraph:
      return "graph";
    case AttrValue::Kind::kGraphs:
      return "graphs";
    case AttrValue::Kind::kType:
      return "type";
  }
  return "invalid";
}

const AttrValue* AttrMap::get(std::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.first.str() == key) return &e.second;
  }
  return nullptr;
}

AttrValue* AttrMap::get_mutable(std::string_view key) {
  for (Entry& e : entries_) {
    if (e.first.str() == key) return &e.second;
  }
  return nullptr;
}

void AttrMap::set(std::string_view key, AttrValue value) {
  if (AttrValue* existing = get_mutable(key)) {
    *existing = std::move(value);
    return;
  }
  // Built in place: no temporary entry to move and destroy.
  entries_.emplace_back(AttrKey(key), std::move(value));
}

void AttrMap::set(AttrKey key, AttrValue value) {
  for (Entry& e : entries_) {
    if (e.first == key) {
      e.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(key, std::move(value));
}

bool AttrMap::remove(std::string_view key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first.str() == key) {
      entries_.erase(it);
      return true;
    }
  }
  return false;
}

int64_t AttrMap::get_int(std::string_view key, int64_t fallback) const {
  const AttrValue* v = get(key);
  return (v && v->as_int()) ? *v->as_int() : fallback;
}

bool AttrMap::get_bool(std::string_view key, bool fallback) const {
  const AttrValue* v = get(key);
  return (v && v->as_bool()) ? *v->as_bool() : fallback;
}

std::string AttrMap::get_string(std::string_view key, std::string fallback) const {
  const AttrValue* v = get(key);
  return (v && v->as_string()) ? *v->as_string() : fallback;
}

}  // namespace graphsplit::sdk
