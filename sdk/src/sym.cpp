// Hash-consed dimension expressions. Every result goes through the polynomial normal form (Poly), so
// "a + b - a" is b and "2*(s0+1)" is "2*s0+2" whatever order the operations came in.
#include "graphsplit/sdk/ir/sym.h"

#include <algorithm>
#include <cctype>
#include <deque>
#include <map>
#include <unordered_set>

namespace graphsplit::sdk {

namespace {

// An expression whose written-out tree would have more nodes than this becomes a new symbol instead (see
// intern). Shapes never need more; it bounds the text of a dimension name, the work of every operation, and
// every walk of a tree, which would otherwise be exponential on a shared (hash-consed) one.
constexpr uint64_t kMaxTreeSize = 256;

int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw SymOverflow("integer overflow in a dimension expression");
  return r;
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw SymOverflow("integer overflow in a dimension expression");
  return r;
}
int64_t floor_div_int(int64_t a, int64_t b) {
  if (b == 0) throw SymOverflow("division by zero in a dimension expression");
  if (a == INT64_MIN && b == -1) throw SymOverflow("integer overflow in a dimension expression");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floor_mod_int(int64_t a, int64_t b) {
  if (b == 0) throw SymOverflow("division by zero in a dimension expression");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Interval arithmetic that saturates at the infinities instead of failing: a range is a bound, not a value.
constexpr int64_t kInf = SymRange::kPlusInf;
constexpr int64_t kNegInf = SymRange::kMinusInf;
bool is_inf(int64_t v) {
  return v == kInf || v == kNegInf;
}
int64_t sat_add(int64_t a, int64_t b) {
  if (is_inf(a)) return a;
  if (is_inf(b)) return b;
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return a > 0 ? kInf : kNegInf;
  return r;
}
int64_t sat_mul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  const bool negative = (a < 0) != (b < 0);
  if (is_inf(a) || is_inf(b)) return negative ? kNegInf : kInf;
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return negative ? kNegInf : kInf;
  return r;
}
SymRange range_add(SymRange a, SymRange b) {
  const int64_t lo = (a.lo == kNegInf || b.lo == kNegInf) ? kNegInf : sat_add(a.lo, b.lo);
  const int64_t hi = (a.hi == kInf || b.hi == kInf) ? kInf : sat_add(a.hi, b.hi);
  return {lo, hi};
}
SymRange range_mul(SymRange a, SymRange b) {
  const int64_t c[4] = {sat_mul(a.lo, b.lo), sat_mul(a.lo, b.hi), sat_mul(a.hi, b.lo), sat_mul(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

}  // namespace

struct Factor {
  const DimExpr::Node* atom;
  int32_t power;
};
using Monomial = std::vector<Factor>;  // sorted by atom id
struct Term {
  Monomial monomial;
  int64_t coef;
};

struct DimExpr::Node {
  Kind kind = Kind::kConst;
  int64_t value = 0;  // kConst; kSum: the constant term
  std::string name;   // kSymbol
  bool unbacked = false;
  SymRange range;
  uint64_t id = 0;
  std::vector<Term> terms;  // kSum, sorted by monomial
  const Node* a = nullptr;  // binary atoms
  const Node* b = nullptr;
  uint64_t tree_size = 1;  // nodes of the tree written out, at most kMaxTreeSize + 1
};

struct SymPoly {
  int64_t constant = 0;
  std::vector<Term> terms;  // sorted, no zero coefficient
};
using Poly = SymPoly;

namespace {

bool monomial_less(const Monomial& x, const Monomial& y) {
  const size_t n = std::min(x.size(), y.size());
  for (size_t i = 0; i < n; ++i) {
    if (x[i].atom->id != y[i].atom->id) return x[i].atom->id < y[i].atom->id;
    if (x[i].power != y[i].power) return x[i].power < y[i].power;
  }
  return x.size() < y.size();
}
bool monomial_equal(const Monomial& x, const Monomial& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i].atom != y[i].atom || x[i].power != y[i].power) return false;
  }
  return true;
}

Poly poly_of(const DimExpr::Node* n) {
  Poly p;
  if (n->kind == DimExpr::Kind::kConst) {
    p.constant = n->value;
  } else if (n->kind == DimExpr::Kind::kSum) {
    p.constant = n->value;
    p.terms = n->terms;
  } else {
    p.terms.push_back({{{n, 1}}, 1});
  }
  return p;
}

Poly poly_add(const Poly& x, const Poly& y, int64_t y_scale) {
  Poly r;
  r.constant = checked_add(x.constant, checked_mul(y.constant, y_scale));
  size_t i = 0, j = 0;
  while (i < x.terms.size() || j < y.terms.size()) {
    if (j == y.terms.size() ||
        (i < x.terms.size() && monomial_less(x.terms[i].monomial, y.terms[j].monomial))) {
      r.terms.push_back(x.terms[i++]);
    } else if (i == x.terms.size() || monomial_less(y.terms[j].monomial, x.terms[i].monomial)) {
      r.terms.push_back({y.terms[j].monomial, checked_mul(y.terms[j].coef, y_scale)});
      ++j;
    } else {
      const int64_t c = checked_add(x.terms[i].coef, checked_mul(y.terms[j].coef, y_scale));
      if (c != 0) r.terms.push_back({x.terms[i].monomial, c});
      ++i;
      ++j;
    }
  }
  return r;
}

Monomial monomial_mul(const Monomial& x, const Monomial& y) {
  Monomial r;
  size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    if (j == y.size() || (i < x.size() && x[i].atom->id < y[j].atom->id)) {
      r.push_back(x[i++]);
    } else if (i == x.size() || y[j].atom->id < x[i].atom->id) {
      r.push_back(y[j++]);
    } else {
      r.push_back({x[i].atom, x[i].power + y[j].power});
      ++i;
      ++j;
    }
  }
  return r;
}

Poly poly_mul(const Poly& x, const Poly& y) {
  Poly r;
  r.constant = checked_mul(x.constant, y.constant);
  std::vector<Term> all;
  for (const Term& t : x.terms) {
    if (y.constant != 0) all.push_back({t.monomial, checked_mul(t.coef, y.constant)});
  }
  for (const Term& t : y.terms) {
    if (x.constant != 0) all.push_back({t.monomial, checked_mul(t.coef, x.constant)});
  }
  for (const Term& a : x.terms) {
    for (const Term& b : y.terms)
      all.push_back({monomial_mul(a.monomial, b.monomial), checked_mul(a.coef, b.coef)});
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const Term& a, const Term& b) { return monomial_less(a.monomial, b.monomial); });
  for (Term& t : all) {
    if (!r.terms.empty() && monomial_equal(r.terms.back().monomial, t.monomial)) {
      r.terms.back().coef = checked_add(r.terms.back().coef, t.coef);
      if (r.terms.back().coef == 0) r.terms.pop_back();
    } else {
      r.terms.push_back(std::move(t));
    }
  }
  return r;
}

SymRange monomial_range(const Monomial& m) {
  SymRange r{1, 1};
  for (const Factor& f : m) {
    for (int32_t p = 0; p < f.power; ++p) r = range_mul(r, f.atom->range);
  }
  return r;
}

SymRange poly_range(const Poly& p) {
  SymRange r{p.constant, p.constant};
  for (const Term& t : p.terms)
    r = range_add(r, range_mul(SymRange{t.coef, t.coef}, monomial_range(t.monomial)));
  return r;
}

void append_u64(std::string* key, uint64_t v) {
  key->append(reinterpret_cast<const char*>(&v), sizeof v);
}

uint64_t tree_size(const DimExpr::Node& n) {
  uint64_t size = 1;
  auto grow = [&](uint64_t by) { size = std::min(size + by, kMaxTreeSize + 1); };
  for (const Term& t : n.terms) {
    grow(1);
    for (const Factor& f : t.monomial) grow(f.atom->tree_size * static_cast<uint64_t>(f.power));
  }
  if (n.a) grow(n.a->tree_size);
  if (n.b) grow(n.b->tree_size);
  return size;
}

std::string key_of(const DimExpr::Node& n) {
  std::string key(1, static_cast<char>(n.kind));
  append_u64(&key, static_cast<uint64_t>(n.value));
  if (n.kind == DimExpr::Kind::kSymbol) key += n.name;
  for (const Term& t : n.terms) {
    append_u64(&key, static_cast<uint64_t>(t.coef));
    append_u64(&key, t.monomial.size());
    for (const Factor& f : t.monomial) {
      append_u64(&key, f.atom->id);
      append_u64(&key, static_cast<uint64_t>(f.power));
    }
  }
  if (n.a) append_u64(&key, n.a->id);
  if (n.b) append_u64(&key, n.b->id);
  return key;
}

bool needs_parens(const DimExpr::Node* n) {
  return n->kind == DimExpr::Kind::kSum || (n->kind == DimExpr::Kind::kConst && n->value < 0);
}

std::string text_of(const DimExpr::Node* n);

std::string monomial_text(const Monomial& m) {
  std::string s;
  for (const Factor& f : m) {
    for (int32_t p = 0; p < f.power; ++p) s += (s.empty() ? "" : "*") + text_of(f.atom);
  }
  return s;
}

std::string sum_text(const DimExpr::Node* n) {
  std::string s;
  for (const Term& t : n->terms) {
    // The magnitude as unsigned, so that INT64_MIN prints too.
    const uint64_t mag =
        t.coef < 0 ? uint64_t{0} - static_cast<uint64_t>(t.coef) : static_cast<uint64_t>(t.coef);
    const std::string body = monomial_text(t.monomial);
    const std::string term = mag == 1 ? body : std::to_string(mag) + "*" + body;
    s += (t.coef < 0 ? "-" : (s.empty() ? "" : "+")) + term;
  }
  if (n->value > 0) s += "+" + std::to_string(n->value);
  if (n->value < 0) s += std::to_string(n->value);
  return s;
}

std::string text_of(const DimExpr::Node* n) {
  auto wrap = [](const DimExpr::Node* x) { return needs_parens(x) ? "(" + text_of(x) + ")" : text_of(x); };
  switch (n->kind) {
    case DimExpr::Kind::kConst:
      return std::to_string(n->value);
    case DimExpr::Kind::kSymbol:
      return n->name;
    case DimExpr::Kind::kSum:
      return sum_text(n);
    case DimExpr::Kind::kFloorDiv:
      return "floor(" + wrap(n->a) + "/" + wrap(n->b) + ")";
    case DimExpr::Kind::kMod:
      return "mod(" + text_of(n->a) + "," + text_of(n->b) + ")";
    case DimExpr::Kind::kMax:
      return "max(" + text_of(n->a) + "," + text_of(n->b) + ")";
    case DimExpr::Kind::kMin:
      return "min(" + text_of(n->a) + "," + text_of(n->b) + ")";
  }
  return "?";
}

}  // namespace

// ------------------------------------------------------------------ DimExpr

DimExpr::Kind DimExpr::kind() const {
  return node_->kind;
}
int64_t DimExpr::value() const {
  return node_->value;
}
std::optional<int64_t> DimExpr::as_const() const {
  if (is_const()) return node_->value;
  return std::nullopt;
}
SymRange DimExpr::range() const {
  return node_ ? node_->range : SymRange{};
}
const std::string& DimExpr::name() const {
  static const std::string empty;
  return node_ && node_->kind == Kind::kSymbol ? node_->name : empty;
}
bool DimExpr::is_unbacked_symbol() const {
  return node_ && node_->kind == Kind::kSymbol && node_->unbacked;
}
std::string DimExpr::to_string() const {
  return node_ ? text_of(node_) : "?";
}
uint64_t DimExpr::id() const {
  return node_ ? node_->id : 0;
}

// ------------------------------------------------------------------ SymbolTable

struct SymbolTable::Impl {
  std::deque<DimExpr::Node> nodes;  // stable addresses
  std::unordered_map<std::string, const DimExpr::Node*> by_key;
  std::map<std::string, int, std::less<>> fresh_counter;  // found by a view: no string per fresh symbol
  // Products already made, by their factors in the order they were given. A shape's element count is formed
  // again for every node that reads it (batch * sequence in each attention reshape), and the polynomial route
  // allocates and hashes each time; the nodes it caches never move (a deque) and a product depends on nothing
  // but its factors.
  struct FactorsHash {
    size_t operator()(const std::pair<const DimExpr::Node*, const DimExpr::Node*>& p) const {
      const auto x = reinterpret_cast<uintptr_t>(p.first), y = reinterpret_cast<uintptr_t>(p.second);
      return std::hash<uintptr_t>()(x * 0x9E3779B97F4A7C15ull ^ y);
    }
  };
  std::unordered_map<std::pair<const DimExpr::Node*, const DimExpr::Node*>, const DimExpr::Node*, FactorsHash>
      products;
  std::unordered_map<const DimExpr::Node*, DimExpr> subst;     // unified symbol -> representative
  std::unordered_map<const DimExpr::Node*, DimExpr> resolved;  // cache, valid for `subst` as it is
  std::unordered_set<std::string> assumed;                     // assumptions_, for lookup
  // Constants by value: shape inference asks for one per dimension of every value, and the general path
  // builds and hashes a key string each time.
  std::unordered_map<int64_t, const DimExpr::Node*> constants;
};

SymbolTable::SymbolTable() : impl_(std::make_unique<Impl>()) {}
SymbolTable::~SymbolTable() = default;
size_t SymbolTable::size() const {
  return impl_->nodes.size();
}

DimExpr SymbolTable::intern(DimExpr::Node node) {
  std::string key = key_of(node);
  auto it = impl_->by_key.find(key);
  if (it != impl_->by_key.end()) return DimExpr(it->second);
  node.tree_size = tree_size(node);
  if (node.tree_size > kMaxTreeSize) {
    // Too large to keep: a new symbol with the expression's range stands for it. The same expression, made
    // again, finds that symbol under its key, so equal computations still give equal handles.
    const DimExpr opaque = fresh_symbol("u", node.range);
    impl_->by_key.emplace(std::move(key), opaque.node());
    return opaque;
  }
  node.id = impl_->nodes.size();
  impl_->nodes.push_back(std::move(node));
  const DimExpr::Node* stored = &impl_->nodes.back();
  impl_->by_key.emplace(std::move(key), stored);
  return DimExpr(stored);
}

DimExpr SymbolTable::constant(int64_t value) {
  const auto known = impl_->constants.find(value);
  if (known != impl_->constants.end()) return DimExpr(known->second);
  DimExpr::Node n;
  n.kind = DimExpr::Kind::kConst;
  n.value = value;
  n.range = {value, value};
  const DimExpr made = intern(std::move(n));
  impl_->constants.emplace(value, made.node());
  return made;
}

DimExpr SymbolTable::symbol(std::string_view name, SymRange range) {
  DimExpr::Node n;
  n.kind = DimExpr::Kind::kSymbol;
  n.name = std::string(name);
  n.range = range;
  return intern(std::move(n));
}

// A name no symbol has yet, interned directly: its key is built and hashed once (looking it up and then
// interning it built and hashed it twice more, a third of shape inference on a graph of dynamic reshapes).
DimExpr SymbolTable::fresh_symbol(std::string_view prefix, SymRange range, bool unbacked) {
  auto counter = impl_->fresh_counter.find(prefix);
  if (counter == impl_->fresh_counter.end())
    counter = impl_->fresh_counter.emplace(std::string(prefix), 0).first;
  int& next = counter->second;
  for (;; ++next) {
    DimExpr::Node probe;
    probe.kind = DimExpr::Kind::kSymbol;
    probe.name = std::string(prefix) + std::to_string(next);
    auto [slot, fresh] = impl_->by_key.try_emplace(key_of(probe), nullptr);
    if (!fresh) continue;
    probe.range = range;
    probe.unbacked = unbacked;
    probe.tree_size = tree_size(probe);
    probe.id = impl_->nodes.size();
    impl_->nodes.push_back(std::move(probe));
    slot->second = &impl_->nodes.back();
    ++next;
    return DimExpr(slot->second);
  }
}

namespace {
DimExpr::Node sum_node(const Poly& p) {
  DimExpr::Node n;
  n.kind = DimExpr::Kind::kSum;
  n.value = p.constant;
  n.terms = p.terms;
  n.range = poly_range(p);
  return n;
}
}  // namespace

// The canonical expression of a polynomial: a constant, a bare atom, or a sum node.
DimExpr SymbolTable::from_poly(const SymPoly& p) {
  if (p.terms.empty()) return constant(p.constant);
  const Term& first = p.terms[0];
  if (p.constant == 0 && p.terms.size() == 1 && first.coef == 1 && first.monomial.size() == 1 &&
      first.monomial[0].power == 1)
    return DimExpr(first.monomial[0].atom);
  return intern(sum_node(p));
}

DimExpr SymbolTable::add(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  return from_poly(poly_add(poly_of(a.node()), poly_of(b.node()), 1));
}

DimExpr SymbolTable::sub(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  return from_poly(poly_add(poly_of(a.node()), poly_of(b.node()), -1));
}

DimExpr SymbolTable::mul(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  // Shortcuts for what element counts are mostly made of (a product starts at 1, most dimensions are
  // numbers): the polynomial route gives the same interned expression at a few hundred times the cost.
  if (a.is_const() && a.value() == 1) return b;
  if (b.is_const() && b.value() == 1) return a;
  if (int64_t v = 0; a.is_const() && b.is_const() && !__builtin_mul_overflow(a.value(), b.value(), &v))
    return constant(v);
  const auto factors = std::make_pair(a.node(), b.node());
  if (const auto known = impl_->products.find(factors); known != impl_->products.end())
    return DimExpr(known->second);
  const DimExpr product = from_poly(poly_mul(poly_of(a.node()), poly_of(b.node())));
  impl_->products.emplace(factors, product.node());
  return product;
}

DimExpr SymbolTable::atom_op(DimExpr::Kind kind, DimExpr a, DimExpr b) {
  if ((kind == DimExpr::Kind::kMax || kind == DimExpr::Kind::kMin) && b.id() < a.id()) std::swap(a, b);
  DimExpr::Node n;
  n.kind = kind;
  n.a = a.node();
  n.b = b.node();
  const SymRange ra = a.range(), rb = b.range();
  switch (kind) {
    case DimExpr::Kind::kFloorDiv:
      if (rb.lo > 0 && !is_inf(rb.lo) && rb.is_point()) {
        n.range = {ra.lo == kNegInf ? kNegInf : floor_div_int(ra.lo, rb.lo),
                   ra.hi == kInf ? kInf : floor_div_int(ra.hi, rb.lo)};
      }
      break;
    case DimExpr::Kind::kMod:
      if (rb.lo > 0 && rb.hi != kInf) n.range = {0, rb.hi - 1};
      break;
    case DimExpr::Kind::kMax:
      n.range = {std::max(ra.lo, rb.lo), std::max(ra.hi, rb.hi)};
      break;
    case DimExpr::Kind::kMin:
      n.range = {std::min(ra.lo, rb.lo), std::min(ra.hi, rb.hi)};
      break;
    default:
      break;
  }
  return intern(std::move(n));
}

namespace {
// p = divisor * quotient + rest, with every coefficient of `rest` not a multiple of the divisor and its
// constant term in [0, divisor): floor(p / d) = quotient + floor(rest / d) holds for every integer value.
void split_by(const Poly& p, int64_t d, Poly* quotient, Poly* rest) {
  quotient->constant = floor_div_int(p.constant, d);
  rest->constant = floor_mod_int(p.constant, d);
  for (const Term& t : p.terms) {
    if (t.coef % d == 0) {
      quotient->terms.push_back({t.monomial, t.coef / d});
    } else {
      rest->terms.push_back(t);
    }
  }
}
}  // namespace

DimExpr SymbolTable::floor_div(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  if (b.is_const() && b.value() == 0) throw SymOverflow("division by zero in a dimension expression");
  if (a.is_const() && b.is_const()) return constant(floor_div_int(a.value(), b.value()));
  if (b.is_const() && b.value() == 1) return a;
  if (b.is_const() && b.value() == -1) return neg(a);
  if (!b.is_const() || b.value() < 0) return atom_op(DimExpr::Kind::kFloorDiv, a, b);
  const int64_t d = b.value();
  // floor(floor(x / c) / d) = floor(x / (c * d)) for positive c and d.
  if (a.kind() == DimExpr::Kind::kFloorDiv && a.node()->b->kind == DimExpr::Kind::kConst &&
      a.node()->b->value > 0)
    return floor_div(DimExpr(a.node()->a), constant(checked_mul(a.node()->b->value, d)));
  // floor((floor(x / c) + r) / d) = floor((x + r*c) / (c*d)) for positive c and d (Conv stacks).
  {
    const Poly p = poly_of(a.node());
    if (p.terms.size() == 1 && p.terms[0].coef == 1 && p.terms[0].monomial.size() == 1 &&
        p.terms[0].monomial[0].power == 1 && p.terms[0].monomial[0].atom->kind == DimExpr::Kind::kFloorDiv) {
      const DimExpr::Node* inner = p.terms[0].monomial[0].atom;
      if (inner->b->kind == DimExpr::Kind::kConst && inner->b->value > 0) {
        const int64_t c = inner->b->value;
        return floor_div(add(DimExpr(inner->a), constant(checked_mul(p.constant, c))),
                         constant(checked_mul(c, d)));
      }
    }
  }
  Poly quotient, rest;
  split_by(poly_of(a.node()), d, &quotient, &rest);
  const SymRange rr = poly_range(rest);
  DimExpr q = from_poly(quotient);
  if (rest.terms.empty()) return q;  // its constant is in [0, d)
  if (!is_inf(rr.lo) && !is_inf(rr.hi) && floor_div_int(rr.lo, d) == floor_div_int(rr.hi, d))
    return add(q, constant(floor_div_int(rr.lo, d)));
  return add(q, atom_op(DimExpr::Kind::kFloorDiv, from_poly(rest), b));
}

DimExpr SymbolTable::ceil_div(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  return floor_div(sub(add(a, b), constant(1)), b);
}

DimExpr SymbolTable::mod(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  if (b.is_const() && b.value() == 0) throw SymOverflow("division by zero in a dimension expression");
  if (a.is_const() && b.is_const()) return constant(floor_mod_int(a.value(), b.value()));
  if (b.is_const() && (b.value() == 1 || b.value() == -1)) return constant(0);
  if (!b.is_const() || b.value() < 0) return atom_op(DimExpr::Kind::kMod, a, b);
  Poly quotient, rest;
  split_by(poly_of(a.node()), b.value(), &quotient, &rest);
  if (rest.terms.empty()) return constant(rest.constant);
  const SymRange rr = poly_range(rest);
  if (rr.lo >= 0 && !is_inf(rr.hi) && rr.hi < b.value()) return from_poly(rest);
  return atom_op(DimExpr::Kind::kMod, from_poly(rest), b);
}

namespace {
// Whether x is an operand of `outer`, an op(..) node, or of op(..) nodes nested in it (at most 32 of them are
// looked at, so that a call costs the same on any tree): then op(outer, x) is outer, since max and min absorb
// a repeated operand. Broadcasting one dimension against the same one again and again (a chain of Adds over
// inputs of one symbolic size) otherwise nested a level per node, and each node's dimension name spelled all
// of them: 50k Adds took 4 GB and minutes.
bool absorbs(const DimExpr::Node* outer, const DimExpr::Node* x, DimExpr::Kind op) {
  constexpr int kBudget = 32;
  const DimExpr::Node* todo[kBudget];
  int size = 0, visits = 0;
  if (outer && outer->kind == op) todo[size++] = outer;
  while (size > 0 && visits++ < kBudget) {
    const DimExpr::Node* n = todo[--size];
    if (n->a == x || n->b == x) return true;
    for (const DimExpr::Node* child : {n->a, n->b}) {
      if (child && child->kind == op && size < kBudget) todo[size++] = child;
    }
  }
  return false;
}
}  // namespace

DimExpr SymbolTable::max(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  if (a == b) return a;
  if (absorbs(a.node(), b.node(), DimExpr::Kind::kMax)) return a;
  if (absorbs(b.node(), a.node(), DimExpr::Kind::kMax)) return b;
  if (a.is_const() && b.is_const()) return constant(std::max(a.value(), b.value()));
  const SymRange d = sub(a, b).range();
  if (d.lo >= 0 && !is_inf(d.lo)) return a;
  if (d.hi <= 0 && !is_inf(d.hi)) return b;
  const SymRange ra = a.range(), rb = b.range();
  if (!is_inf(ra.lo) && !is_inf(rb.hi) && ra.lo >= rb.hi) return a;
  if (!is_inf(rb.lo) && !is_inf(ra.hi) && rb.lo >= ra.hi) return b;
  return atom_op(DimExpr::Kind::kMax, a, b);
}

DimExpr SymbolTable::min(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  if (a == b) return a;
  if (absorbs(a.node(), b.node(), DimExpr::Kind::kMin)) return a;
  if (absorbs(b.node(), a.node(), DimExpr::Kind::kMin)) return b;
  if (a.is_const() && b.is_const()) return constant(std::min(a.value(), b.value()));
  const SymRange d = sub(a, b).range();
  if (d.lo >= 0 && !is_inf(d.lo)) return b;
  if (d.hi <= 0 && !is_inf(d.hi)) return a;
  const SymRange ra = a.range(), rb = b.range();
  if (!is_inf(ra.lo) && !is_inf(rb.hi) && ra.lo >= rb.hi) return b;
  if (!is_inf(rb.lo) && !is_inf(ra.hi) && rb.lo >= ra.hi) return a;
  return atom_op(DimExpr::Kind::kMin, a, b);
}

DimExpr SymbolTable::trunc_div(DimExpr a, DimExpr b) {
  if (!a.valid() || !b.valid()) return {};
  if (a.is_const() && b.is_const()) {
    if (b.value() == 0) throw SymOverflow("division by zero in a dimension expression");
    if (a.value() == INT64_MIN && b.value() == -1)
      throw SymOverflow("integer overflow in a dimension expression");
    return constant(a.value() / b.value());
  }
  if (b.is_const() && b.value() > 0 && a.range().lo >= 0) return floor_div(a, b);
  return {};
}

namespace {
bool contains(const DimExpr::Node* e, const DimExpr::Node* sym) {
  if (e == sym) return true;
  for (const Term& t : e->terms) {
    for (const Factor& f : t.monomial) {
      if (contains(f.atom, sym)) return true;
    }
  }
  return (e->a && contains(e->a, sym)) || (e->b && contains(e->b, sym));
}
}  // namespace

bool SymbolTable::unify(DimExpr a, DimExpr b) {
  a = resolve(a);
  b = resolve(b);
  if (!a.valid() || !b.valid() || a == b) return true;
  if (a.is_const() && b.is_const()) return false;
  const bool a_sym = a.kind() == DimExpr::Kind::kSymbol, b_sym = b.kind() == DimExpr::Kind::kSymbol;
  if (a_sym && b_sym && a.id() < b.id()) std::swap(a, b);  // the older symbol stays
  if (!a_sym && b_sym) std::swap(a, b);
  if (a.kind() != DimExpr::Kind::kSymbol || contains(b.node(), a.node()))
    return true;  // nothing to substitute
  impl_->subst[a.node()] = b;
  impl_->resolved.clear();
  return true;
}

bool SymbolTable::has_substitutions() const {
  return !impl_->subst.empty();
}

DimExpr SymbolTable::resolve(DimExpr e) {
  if (!e.valid() || impl_->subst.empty() || e.is_const()) return e;
  auto cached = impl_->resolved.find(e.node());
  if (cached != impl_->resolved.end()) return cached->second;
  const DimExpr::Node* n = e.node();
  DimExpr r = e;
  switch (n->kind) {
    case DimExpr::Kind::kSymbol: {
      auto it = impl_->subst.find(n);
      if (it != impl_->subst.end()) r = resolve(it->second);
      break;
    }
    case DimExpr::Kind::kSum: {
      r = constant(n->value);
      for (const Term& t : n->terms) {
        DimExpr m = constant(t.coef);
        for (const Factor& f : t.monomial) {
          const DimExpr atom = resolve(DimExpr(f.atom));
          for (int32_t p = 0; p < f.power; ++p) m = mul(m, atom);
        }
        r = add(r, m);
      }
      break;
    }
    case DimExpr::Kind::kFloorDiv:
      r = floor_div(resolve(DimExpr(n->a)), resolve(DimExpr(n->b)));
      break;
    case DimExpr::Kind::kMod:
      r = mod(resolve(DimExpr(n->a)), resolve(DimExpr(n->b)));
      break;
    case DimExpr::Kind::kMax:
      r = max(resolve(DimExpr(n->a)), resolve(DimExpr(n->b)));
      break;
    case DimExpr::Kind::kMin:
      r = min(resolve(DimExpr(n->a)), resolve(DimExpr(n->b)));
      break;
    case DimExpr::Kind::kConst:
      break;
  }
  impl_->resolved[n] = r;
  return r;
}

std::optional<int64_t> SymbolTable::evaluate(DimExpr e,
                                             const std::unordered_map<std::string, int64_t>& values) const {
  if (!e.valid()) return std::nullopt;
  const DimExpr::Node* n = e.node();
  auto sub_eval = [&](const DimExpr::Node* x) { return evaluate(DimExpr(x), values); };
  switch (n->kind) {
    case DimExpr::Kind::kConst:
      return n->value;
    case DimExpr::Kind::kSymbol: {
      auto it = values.find(n->name);
      if (it == values.end()) return std::nullopt;
      return it->second;
    }
    case DimExpr::Kind::kSum: {
      int64_t total = n->value;
      for (const Term& t : n->terms) {
        int64_t m = t.coef;
        for (const Factor& f : t.monomial) {
          auto v = sub_eval(f.atom);
          if (!v) return std::nullopt;
          for (int32_t p = 0; p < f.power; ++p) m = checked_mul(m, *v);
        }
        total = checked_add(total, m);
      }
      return total;
    }
    default:
      break;
  }
  auto x = sub_eval(n->a), y = sub_eval(n->b);
  if (!x || !y) return std::nullopt;
  switch (n->kind) {
    case DimExpr::Kind::kFloorDiv:
      return floor_div_int(*x, *y);
    case DimExpr::Kind::kMod:
      return floor_mod_int(*x, *y);
    case DimExpr::Kind::kMax:
      return std::max(*x, *y);
    default:
      return std::min(*x, *y);
  }
}

void SymbolTable::assume(std::string condition) {
  if (impl_->assumed.insert(condition).second) assumptions_.push_back(std::move(condition));
}

// ------------------------------------------------------------------ parser

namespace {

class Parser {
 public:
  Parser(SymbolTable* table, std::string_view text) : t_(table), s_(text) {}

  std::optional<DimExpr> run() {
    auto e = sum();
    skip();
    if (!e || pos_ != s_.size()) return std::nullopt;
    return e;
  }

 private:
  void skip() {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
  }
  bool eat(char c) {
    skip();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<DimExpr> sum() {
    auto left = product();
    while (left) {
      if (eat('+')) {
        auto right = product();
        if (!right) return std::nullopt;
        left = t_->add(*left, *right);
      } else if (eat('-')) {
        auto right = product();
        if (!right) return std::nullopt;
        left = t_->sub(*left, *right);
      } else {
        break;
      }
    }
    return left;
  }
  std::optional<DimExpr> product() {
    auto left = unary();
    while (left && eat('*')) {
      auto right = unary();
      if (!right) return std::nullopt;
      left = t_->mul(*left, *right);
    }
    return left;
  }
  std::optional<DimExpr> unary() {
    if (eat('-')) {
      auto e = unary();
      if (!e) return std::nullopt;
      return t_->neg(*e);
    }
    return primary();
  }
  std::optional<DimExpr> call(const std::string& fn) {
    auto a = sum();
    if (!a) return std::nullopt;
    if (fn == "floor") {
      if (!eat('/')) return std::nullopt;
      auto b = sum();
      if (!b || !eat(')')) return std::nullopt;
      return t_->floor_div(*a, *b);
    }
    if (!eat(',')) return std::nullopt;
    auto b = sum();
    if (!b || !eat(')')) return std::nullopt;
    if (fn == "mod") return t_->mod(*a, *b);
    if (fn == "max") return t_->max(*a, *b);
    return t_->min(*a, *b);
  }
  std::optional<DimExpr> primary() {
    skip();
    if (pos_ >= s_.size()) return std::nullopt;
    if (eat('(')) {
      auto e = sum();
      if (!e || !eat(')')) return std::nullopt;
      return e;
    }
    const char c = s_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_])))
        v = checked_add(checked_mul(v, 10), s_[pos_++] - '0');
      return t_->constant(v);
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') return std::nullopt;
    const size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' || s_[pos_] == '.'))
      ++pos_;
    const std::string word(s_.substr(start, pos_ - start));
    if ((word == "floor" || word == "mod" || word == "max" || word == "min") && eat('(')) return call(word);
    return t_->symbol(word);
  }

  SymbolTable* t_;
  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

std::optional<DimExpr> SymbolTable::parse(std::string_view text) {
  try {
    return Parser(this, text).run();
  } catch (const SymOverflow&) {
    return std::nullopt;
  }
}

}  // namespace graphsplit::sdk
