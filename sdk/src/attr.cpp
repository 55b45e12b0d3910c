#include "graphsplit/sdk/ir/attr.h"

namespace graphsplit::sdk {

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
  for (const auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

AttrValue* AttrMap::get_mutable(std::string_view key) {
  for (auto& [k, v] : entries_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void AttrMap::set(std::string_view key, AttrValue value) {
  if (AttrValue* existing = get_mutable(key)) {
    *existing = std::move(value);
    return;
  }
  entries_.emplace_back(std::string(key), std::move(value));
}

bool AttrMap::remove(std::string_view key) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->first == key) {
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
