// Symbolic dimensions: the expressions shape inference writes when a size is not a number.
//
// An expression is immutable and hash-consed in its SymbolTable, so two expressions are equal exactly when
// their handles are equal. The canonical form is a sum of products with int64 coefficients over atoms
// (symbols, FloorDiv, Mod, Max, Min); CeilDiv(a, b) is written FloorDiv(a + b - 1, b) so that equal sizes
// compare equal. Arithmetic is overflow-checked: a result outside int64 throws SymOverflow instead of
// wrapping. Every expression carries a value range, used to prove facts such as "this numerator is never
// negative" (so truncating and floor division agree). An expression whose tree, written out, would pass 256
// nodes becomes a new symbol "u<n>" with the expression's range (made again, the same expression gives the
// same symbol): a dimension name stays short and every operation on it cheap, at the price of what inference
// can prove about that size.
//
// Text form (what Shape::dim_names holds for a symbolic dimension, and what the .om and reports print):
// "s0", "2*s0+1", "floor((s1-3)/2)+1", "mod(s0,4)", "max(s0,s1)", "min(s0,8)". parse() reads it back.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graphsplit/sdk/export.h"

namespace graphsplit::sdk {

class SymbolTable;
struct SymPoly;

// Thrown when exact int64 arithmetic is impossible (an overflow, a division by zero).
class GS_SDK_API SymOverflow : public std::overflow_error {
 public:
  explicit SymOverflow(const std::string& what) : std::overflow_error(what) {}
};

// A closed interval of int64; the ends kMinusInf/kPlusInf mean unbounded.
struct GS_SDK_API SymRange {
  static constexpr int64_t kMinusInf = INT64_MIN;
  static constexpr int64_t kPlusInf = INT64_MAX;
  int64_t lo = kMinusInf;
  int64_t hi = kPlusInf;
  bool is_point() const { return lo == hi && lo != kMinusInf && hi != kPlusInf; }
};

// A handle to an interned expression; the default handle is "no expression".
class GS_SDK_API DimExpr {
 public:
  enum class Kind : uint8_t { kConst, kSymbol, kSum, kFloorDiv, kMod, kMax, kMin };
  struct Node;

  DimExpr() = default;
  bool valid() const { return node_ != nullptr; }
  Kind kind() const;
  bool is_const() const { return valid() && kind() == Kind::kConst; }
  // The value of a constant (callers check is_const()).
  int64_t value() const;
  std::optional<int64_t> as_const() const;
  SymRange range() const;
  // A symbol's name; empty for other kinds.
  const std::string& name() const;
  // Unbacked: produced by a data-dependent operator (NonZero's count), not by an input.
  bool is_unbacked_symbol() const;
  std::string to_string() const;
  // Creation order in its table: a total order that is the same on every run over the same input.
  uint64_t id() const;
  const Node* node() const { return node_; }

  friend bool operator==(DimExpr a, DimExpr b) { return a.node_ == b.node_; }
  friend bool operator!=(DimExpr a, DimExpr b) { return a.node_ != b.node_; }

 private:
  friend class SymbolTable;
  struct SymPoly;
  explicit DimExpr(const Node* node) : node_(node) {}
  const Node* node_ = nullptr;
};

// Owns the expressions of one root graph. Not thread-safe: one table per inference run.
class GS_SDK_API SymbolTable {
 public:
  SymbolTable();
  ~SymbolTable();
  SymbolTable(const SymbolTable&) = delete;
  SymbolTable& operator=(const SymbolTable&) = delete;

  DimExpr constant(int64_t value);
  // The symbol of that name (the same handle every time); a new symbol takes `range`, default [0, +inf).
  DimExpr symbol(std::string_view name, SymRange range = {0, SymRange::kPlusInf});
  // A new symbol named "<prefix><n>" with the first n not yet used.
  DimExpr fresh_symbol(std::string_view prefix, SymRange range = {0, SymRange::kPlusInf},
                       bool unbacked = false);

  DimExpr add(DimExpr a, DimExpr b);
  DimExpr sub(DimExpr a, DimExpr b);
  DimExpr mul(DimExpr a, DimExpr b);
  DimExpr neg(DimExpr a) { return mul(constant(-1), a); }
  // Floor division and its remainder (the remainder takes the divisor's sign), as Python's // and %.
  DimExpr floor_div(DimExpr a, DimExpr b);
  DimExpr ceil_div(DimExpr a, DimExpr b);
  DimExpr mod(DimExpr a, DimExpr b);
  DimExpr max(DimExpr a, DimExpr b);
  DimExpr min(DimExpr a, DimExpr b);
  // C-style division truncating towards zero (ONNX integer Div), when the range proves it equals floor
  // division; else an invalid handle.
  DimExpr trunc_div(DimExpr a, DimExpr b);

  // Replaces every occurrence of `symbol` by `value` from now on (an equality the graph proves); the symbol
  // with the lower id stays when both are symbols. Returns false if the two are different constants.
  bool unify(DimExpr a, DimExpr b);
  // `e` with every unified symbol replaced by its representative.
  DimExpr resolve(DimExpr e);
  bool has_substitutions() const;

  // Evaluates under an assignment of symbol names; nullopt if a symbol is unassigned. Throws SymOverflow.
  std::optional<int64_t> evaluate(DimExpr e, const std::unordered_map<std::string, int64_t>& values) const;

  // Reads the text form back; nullopt if the text is not an expression (then it is a plain symbol name).
  std::optional<DimExpr> parse(std::string_view text);

  // Conditions inference could not prove and the model relies on (broadcast of two unknown sizes), as text.
  void assume(std::string condition);
  const std::vector<std::string>& assumptions() const { return assumptions_; }

  size_t size() const;

 private:
  struct Impl;
  GS_SDK_LOCAL DimExpr intern(DimExpr::Node node);
  GS_SDK_LOCAL DimExpr from_poly(const SymPoly& p);
  GS_SDK_LOCAL DimExpr atom_op(DimExpr::Kind kind, DimExpr a, DimExpr b);
  std::unique_ptr<Impl> impl_;
  std::vector<std::string> assumptions_;
};

}  // namespace graphsplit::sdk
