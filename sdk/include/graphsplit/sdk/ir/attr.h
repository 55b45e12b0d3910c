// Typed node and graph attributes.
//
// A graph reference is a non-owning Graph*: the root graph owns every subgraph (GE's model), and the nodes
// that use a subgraph (If branches, Loop bodies, PartitionedCall functions, Case branches) hold references to
// it through attributes of kind kGraph or kGraphs. That keeps "which subgraphs does this node own, and under
// which key" in one place.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/tensor.h"

namespace graphsplit::sdk {

class Graph;

// An ONNX TypeProto kept as its canonical text, e.g. "seq(tensor(float))".
struct TypeRef {
  std::string text;
  friend bool operator==(const TypeRef& a, const TypeRef& b) { return a.text == b.text; }
  friend bool operator!=(const TypeRef& a, const TypeRef& b) { return a.text != b.text; }
};

// A tensor attribute (a Const's value, ONNX's tensor attributes), held by a shared pointer to an immutable
// Tensor: inline, a Tensor made every attribute value 96 bytes, though few attributes are tensors. Equality
// compares the tensors.
struct TensorRef {
  std::shared_ptr<const Tensor> tensor;
  friend bool operator==(const TensorRef& a, const TensorRef& b) {
    return a.tensor == b.tensor || (a.tensor && b.tensor && *a.tensor == *b.tensor);
  }
  friend bool operator!=(const TensorRef& a, const TensorRef& b) { return !(a == b); }
};

// An attribute name, interned: the process keeps one copy of every name ever used (the attribute vocabulary
// is small: ONNX's attribute names and GE's), and an entry holds a pointer to it instead of its own string.
// Interning is thread-safe; a name is usually found in a small per-thread cache without a lock.
class GS_SDK_API AttrKey {
 public:
  explicit AttrKey(std::string_view name);
  const std::string& str() const { return *name_; }
  operator const std::string&() const { return *name_; }
  operator std::string_view() const { return *name_; }
  friend bool operator==(AttrKey a, AttrKey b) { return a.name_ == b.name_; }
  friend bool operator==(AttrKey a, std::string_view b) { return *a.name_ == b; }
  friend bool operator==(AttrKey a, const char* b) { return *a.name_ == b; }
  // Messages are built from keys as from strings.
  friend std::string operator+(std::string a, AttrKey b) { return a += *b.name_; }
  friend std::string operator+(AttrKey a, std::string_view b) { return std::string(*a.name_) += b; }

 private:
  const std::string* name_;
};

GS_SDK_API std::ostream& operator<<(std::ostream& os, AttrKey key);

class GS_SDK_API AttrValue {
 public:
  enum class Kind : int {
    kNone = 0,
    kInt,
    kFloat,
    kString,
    kBool,
    kInts,
    kFloats,
    kStrings,
    kBools,
    kTensor,
    kTensors,
    kGraph,
    kGraphs,
    kType,
  };
  // Alternative order equals Kind order.
  using Storage = std::variant<std::monostate, int64_t, double, std::string, bool, std::vector<int64_t>,
                               std::vector<double>, std::vector<std::string>, std::vector<bool>, TensorRef,
                               std::vector<Tensor>, Graph*, std::vector<Graph*>, TypeRef>;

  AttrValue() = default;
  static AttrValue Int(int64_t v) { return AttrValue(Storage(std::in_place_index<1>, v)); }
  static AttrValue Float(double v) { return AttrValue(Storage(std::in_place_index<2>, v)); }
  static AttrValue String(std::string v) { return AttrValue(Storage(std::in_place_index<3>, std::move(v))); }
  static AttrValue Bool(bool v) { return AttrValue(Storage(std::in_place_index<4>, v)); }
  static AttrValue Ints(std::vector<int64_t> v) {
    return AttrValue(Storage(std::in_place_index<5>, std::move(v)));
  }
  static AttrValue Floats(std::vector<double> v) {
    return AttrValue(Storage(std::in_place_index<6>, std::move(v)));
  }
  static AttrValue Strings(std::vector<std::string> v) {
    return AttrValue(Storage(std::in_place_index<7>, std::move(v)));
  }
  static AttrValue Bools(std::vector<bool> v) {
    return AttrValue(Storage(std::in_place_index<8>, std::move(v)));
  }
  static AttrValue OfTensor(Tensor v) {
    return AttrValue(
        Storage(std::in_place_index<9>, TensorRef{std::make_shared<const Tensor>(std::move(v))}));
  }
  static AttrValue Tensors(std::vector<Tensor> v) {
    return AttrValue(Storage(std::in_place_index<10>, std::move(v)));
  }
  static AttrValue OfGraph(Graph* g) { return AttrValue(Storage(std::in_place_index<11>, g)); }
  static AttrValue Graphs(std::vector<Graph*> v) {
    return AttrValue(Storage(std::in_place_index<12>, std::move(v)));
  }
  static AttrValue Type(std::string text) {
    return AttrValue(Storage(std::in_place_index<13>, TypeRef{std::move(text)}));
  }

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  const Storage& storage() const { return value_; }
  Storage& mutable_storage() { return value_; }

  // Typed access; nullptr when the kind differs.
  const int64_t* as_int() const { return kind() == Kind::kInt ? &std::get<1>(value_) : nullptr; }
  const double* as_float() const { return kind() == Kind::kFloat ? &std::get<2>(value_) : nullptr; }
  const std::string* as_string() const { return kind() == Kind::kString ? &std::get<3>(value_) : nullptr; }
  const bool* as_bool() const { return kind() == Kind::kBool ? &std::get<4>(value_) : nullptr; }
  const std::vector<int64_t>* as_ints() const {
    return kind() == Kind::kInts ? &std::get<5>(value_) : nullptr;
  }
  const std::vector<std::string>* as_strings() const {
    return kind() == Kind::kStrings ? &std::get<7>(value_) : nullptr;
  }
  const Tensor* as_tensor() const {
    return kind() == Kind::kTensor ? std::get<9>(value_).tensor.get() : nullptr;
  }
  Graph* as_graph() const { return kind() == Kind::kGraph ? std::get<11>(value_) : nullptr; }
  const std::vector<Graph*>* as_graphs() const {
    return kind() == Kind::kGraphs ? &std::get<12>(value_) : nullptr;
  }

  friend bool operator==(const AttrValue& a, const AttrValue& b) { return a.value_ == b.value_; }
  friend bool operator!=(const AttrValue& a, const AttrValue& b) { return !(a == b); }

 private:
  explicit AttrValue(Storage v) : value_(std::move(v)) {}
  Storage value_;
};

GS_SDK_API std::string_view to_string(AttrValue::Kind kind);

// An ordered attribute list: insertion order is kept (it is the order ONNX wrote them in, and it decides the
// order of a node's subgraphs), set() replaces in place. An entry is an interned key and a 40-byte value.
class GS_SDK_API AttrMap {
 public:
  struct Entry {
    AttrKey first;
    AttrValue second;
  };
  const AttrValue* get(std::string_view key) const;
  AttrValue* get_mutable(std::string_view key);
  void set(std::string_view key, AttrValue value);
  // As set(), with a key interned before: found by comparing pointers, nothing looked up by text. For a pass
  // that sets the same attributes on many nodes, with the keys made once per run (SDK ABI 2.2).
  void set(AttrKey key, AttrValue value);
  // As get(), with a key interned before: found by comparing pointers. Inline, so no new symbol.
  const AttrValue* get(AttrKey key) const {
    for (const Entry& e : entries_) {
      if (e.first == key) return &e.second;
    }
    return nullptr;
  }
  bool remove(std::string_view key);
  bool has(std::string_view key) const { return get(key) != nullptr; }
  const std::vector<Entry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Room for `n` entries: a node that gets several attributes at once grows its list once.
  void reserve(size_t n) { entries_.reserve(n); }

  // Convenience readers with a default.
  int64_t get_int(std::string_view key, int64_t fallback) const;
  bool get_bool(std::string_view key, bool fallback) const;
  std::string get_string(std::string_view key, std::string fallback = {}) const;

 private:
  std::vector<Entry> entries_;
};

}  // namespace graphsplit::sdk
