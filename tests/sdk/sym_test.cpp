// The dimension-expression algebra against brute force: every canonical form must evaluate like the
// operations that built it, on random assignments that include zero and negative values.
#include "graphsplit/sdk/ir/sym.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

namespace graphsplit::sdk {
namespace {

int64_t py_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t py_mod(int64_t a, int64_t b) {
  return a - b * py_floordiv(a, b);
}

// A random expression built by the table's operations next to a reference evaluator of the same tree.
struct Built {
  DimExpr expr;
  std::function<std::optional<int64_t>(const std::unordered_map<std::string, int64_t>&)> eval;
};

Built random_expr(SymbolTable& t, std::mt19937& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, depth <= 0 ? 1 : 9);
  const int choice = pick(rng);
  if (choice == 0) {
    const int64_t c = std::uniform_int_distribution<int64_t>(-5, 7)(rng);
    return {t.constant(c), [c](const auto&) { return std::optional<int64_t>(c); }};
  }
  if (choice == 1) {
    const std::string name = "s" + std::to_string(std::uniform_int_distribution<int>(0, 2)(rng));
    // Full range, so that no simplification may rely on non-negativity.
    return {t.symbol(name, {SymRange::kMinusInf, SymRange::kPlusInf}),
            [name](const auto& v) { return std::optional<int64_t>(v.at(name)); }};
  }
  Built a = random_expr(t, rng, depth - 1), b = random_expr(t, rng, depth - 1);
  auto both = [a, b](const auto& v, auto op) -> std::optional<int64_t> {
    auto x = a.eval(v), y = b.eval(v);
    if (!x || !y) return std::nullopt;
    return op(*x, *y);
  };
  switch (choice) {
    case 2:
    case 3:
      return {t.add(a.expr, b.expr),
              [both](const auto& v) { return both(v, [](int64_t x, int64_t y) { return x + y; }); }};
    case 4:
      return {t.sub(a.expr, b.expr),
              [both](const auto& v) { return both(v, [](int64_t x, int64_t y) { return x - y; }); }};
    case 5:
      return {t.mul(a.expr, b.expr),
              [both](const auto& v) { return both(v, [](int64_t x, int64_t y) { return x * y; }); }};
    case 6: {
      const int64_t d = std::uniform_int_distribution<int64_t>(1, 4)(rng) * (rng() % 4 == 0 ? -1 : 1);
      auto ea = a.eval;
      return {t.floor_div(a.expr, t.constant(d)), [ea, d](const auto& v) -> std::optional<int64_t> {
                auto x = ea(v);
                if (!x) return std::nullopt;
                return py_floordiv(*x, d);
              }};
    }
    case 7: {
      const int64_t d = std::uniform_int_distribution<int64_t>(1, 5)(rng);
      auto ea = a.eval;
      return {t.mod(a.expr, t.constant(d)), [ea, d](const auto& v) -> std::optional<int64_t> {
                auto x = ea(v);
                if (!x) return std::nullopt;
                return py_mod(*x, d);
              }};
    }
    case 8:
      return {t.max(a.expr, b.expr),
              [both](const auto& v) { return both(v, [](int64_t x, int64_t y) { return std::max(x, y); }); }};
    default:
      return {t.min(a.expr, b.expr),
              [both](const auto& v) { return both(v, [](int64_t x, int64_t y) { return std::min(x, y); }); }};
  }
}

TEST(DimExpr, CanonicalFormsEvaluateLikeTheirOperations) {
  std::mt19937 rng(12345);
  SymbolTable t;
  int checked = 0;
  for (int i = 0; i < 3000; ++i) {
    Built b = random_expr(t, rng, 4);
    for (int k = 0; k < 8; ++k) {
      std::unordered_map<std::string, int64_t> v;
      for (int s = 0; s < 3; ++s)
        v["s" + std::to_string(s)] = std::uniform_int_distribution<int64_t>(-9, 9)(rng);
      auto expected = b.eval(v);
      auto got = t.evaluate(b.expr, v);
      ASSERT_TRUE(got.has_value());
      ASSERT_EQ(*got, *expected) << b.expr.to_string();
      // The printed form reads back as the same interned expression.
      auto reparsed = t.parse(b.expr.to_string());
      ASSERT_TRUE(reparsed.has_value()) << b.expr.to_string();
      ASSERT_EQ(t.evaluate(*reparsed, v), got) << b.expr.to_string();
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24000);
}

TEST(DimExpr, EqualSizesAreTheSameHandle) {
  SymbolTable t;
  const DimExpr s0 = t.symbol("s0"), s1 = t.symbol("s1");
  EXPECT_EQ(t.sub(t.add(s0, s1), s0), s1);
  EXPECT_EQ(t.mul(t.constant(2), t.add(s0, t.constant(1))), t.add(t.add(s0, s0), t.constant(2)));
  EXPECT_EQ(t.add(s0, s1), t.add(s1, s0));
  EXPECT_EQ(t.max(s0, s1), t.max(s1, s0));
  // CeilDiv is FloorDiv of a shifted numerator.
  EXPECT_EQ(t.ceil_div(s0, t.constant(4)), t.floor_div(t.add(s0, t.constant(3)), t.constant(4)));
  // floor((2*s0 + 5) / 2) = s0 + 2 for every integer s0.
  EXPECT_EQ(t.floor_div(t.add(t.mul(t.constant(2), s0), t.constant(5)), t.constant(2)),
            t.add(s0, t.constant(2)));
  // Nested floors by constants collapse.
  EXPECT_EQ(t.floor_div(t.floor_div(s0, t.constant(2)), t.constant(3)), t.floor_div(s0, t.constant(6)));
  // A stack of stride-2 windows: floor((floor((s+1)/2)+1)/2) = floor((s+3)/4).
  const DimExpr half = t.floor_div(t.add(s0, t.constant(1)), t.constant(2));
  EXPECT_EQ(t.floor_div(t.add(half, t.constant(1)), t.constant(2)),
            t.floor_div(t.add(s0, t.constant(3)), t.constant(4)));
  EXPECT_EQ(t.mod(t.mul(t.constant(4), s0), t.constant(2)), t.constant(0));
}

// A product is kept by its factors: made again it is the same handle, also after the table has grown, and it
// is the expression the polynomial route gives (the other order and a sum that expands to it agree).
TEST(DimExpr, AProductMadeAgainIsTheSameHandle) {
  SymbolTable t;
  const DimExpr b = t.symbol("B"), s = t.symbol("S");
  const DimExpr bs = t.mul(b, s);
  for (int i = 0; i < 1000; ++i) (void)t.symbol("x" + std::to_string(i));
  EXPECT_EQ(t.mul(b, s), bs);
  EXPECT_EQ(t.mul(s, b), bs);
  EXPECT_EQ(t.sub(t.mul(t.add(b, t.constant(1)), s), s), bs);  // (B+1)*S - S
  EXPECT_EQ(bs.to_string(), "B*S");
  EXPECT_EQ(t.evaluate(t.mul(bs, t.constant(64)), {{"B", 2}, {"S", 3}}), 384);
}

// A fresh symbol never takes a name already in the table, whoever made it.
TEST(DimExpr, AFreshSymbolSkipsTakenNames) {
  SymbolTable t;
  const DimExpr u0 = t.symbol("u0"), u1 = t.symbol("u1");
  const DimExpr f = t.fresh_symbol("u");
  EXPECT_NE(f, u0);
  EXPECT_NE(f, u1);
  EXPECT_EQ(f.to_string(), "u2");
  EXPECT_EQ(t.fresh_symbol("u").to_string(), "u3");
  EXPECT_EQ(t.fresh_symbol("n").to_string(), "n0");  // each prefix counts on its own
}

TEST(DimExpr, RangesDecideMaxMinAndModulo) {
  SymbolTable t;
  const DimExpr s = t.symbol("s");  // a size: [0, inf)
  EXPECT_EQ(t.max(t.add(s, t.constant(1)), s), t.add(s, t.constant(1)));
  EXPECT_EQ(t.max(s, t.constant(0)), s);
  EXPECT_EQ(t.min(s, t.constant(-1)), t.constant(-1));
  const DimExpr m = t.mod(s, t.constant(4));
  EXPECT_EQ(m.range().lo, 0);
  EXPECT_EQ(m.range().hi, 3);
  EXPECT_EQ(t.mod(m, t.constant(4)), m);
  EXPECT_EQ(t.floor_div(m, t.constant(4)), t.constant(0));
  // ONNX integer Div truncates: only a provably non-negative numerator becomes a floor division.
  EXPECT_EQ(t.trunc_div(s, t.constant(2)), t.floor_div(s, t.constant(2)));
  EXPECT_FALSE(t.trunc_div(t.neg(s), t.constant(2)).valid());
  EXPECT_EQ(t.trunc_div(t.constant(-7), t.constant(2)), t.constant(-3));
}

// max and min absorb an operand they already hold, from either side, so that broadcasting one size against
// another over and over stays one expression; distinct operands still nest.
TEST(DimExpr, MaxAndMinAbsorbARepeatedOperand) {
  SymbolTable t;
  const DimExpr s0 = t.symbol("s0"), n = t.symbol("N"), k = t.symbol("K");
  const DimExpr both = t.max(s0, n);
  DimExpr chain = both;
  for (int i = 0; i < 1000; ++i) chain = i % 2 ? t.max(chain, n) : t.max(s0, chain);
  EXPECT_EQ(chain, both);
  EXPECT_EQ(chain.to_string(), "max(s0,N)");
  const DimExpr low = t.min(n, s0);
  EXPECT_EQ(t.min(low, n), low);
  EXPECT_EQ(t.min(s0, low), low);
  EXPECT_NE(t.max(low, n), low);  // another operation: nothing to absorb
  const DimExpr three = t.max(both, k);
  EXPECT_EQ(three.to_string(), "max(K,max(s0,N))");  // operands in creation order
  EXPECT_EQ(t.max(three, k), three);
  EXPECT_EQ(t.max(three, s0), three);  // found one level down
  EXPECT_EQ(t.max(n, three), three);
}

TEST(DimExpr, ATooLargeExpressionBecomesASymbolWithItsRange) {
  SymbolTable t;
  // A sum of 200 sizes (a Concat of 200 data-dependent outputs) and a max over 200 distinct sizes.
  auto sum_of = [&](int count) {
    DimExpr sum = t.constant(0);
    for (int i = 0; i < count; ++i) sum = t.add(sum, t.symbol("n" + std::to_string(i), {0, 10}));
    return sum;
  };
  // 128 terms make a tree of 257 nodes: that sum became u0, and the rest was added to it.
  const DimExpr sum = sum_of(200);
  EXPECT_EQ(sum.to_string().substr(0, 8), "u0+n128+");
  EXPECT_EQ(sum.range().lo, 0);
  EXPECT_EQ(sum.range().hi, 2000);
  EXPECT_EQ(sum_of(200), sum);  // the same computation, the same symbol
  EXPECT_FALSE(t.evaluate(sum, {{"n0", 1}}).has_value());
  EXPECT_EQ(sum_of(10).kind(), DimExpr::Kind::kSum);  // a small one is kept
  EXPECT_EQ(sum_of(10).to_string(), "n0+n1+n2+n3+n4+n5+n6+n7+n8+n9");
  DimExpr top = t.symbol("m0");
  size_t longest = 0;
  for (int i = 1; i < 5000; ++i) {
    top = t.max(top, t.symbol("m" + std::to_string(i)));
    longest = std::max(longest, top.to_string().size());
  }
  EXPECT_LT(longest, 2000u);
  EXPECT_EQ(top.kind(), DimExpr::Kind::kMax);  // the chain goes on from the symbol that replaced it
  // A power of a symbol: the tree counts each factor.
  DimExpr power = t.symbol("p");
  for (int i = 0; i < 300; ++i) power = t.mul(power, t.symbol("p"));
  // p to the 255th became a symbol u<n>, then multiplied by p 46 more times.
  const std::string text = power.to_string();
  EXPECT_EQ(std::count(text.begin(), text.end(), 'p'), 46);
  EXPECT_EQ(text.substr(text.rfind('*') + 1, 1), "u");
}

TEST(DimExpr, PrintsTheReadableForm) {
  SymbolTable t;
  const DimExpr s1 = t.symbol("s1");
  const DimExpr conv = t.add(t.floor_div(t.sub(s1, t.constant(3)), t.constant(2)), t.constant(1));
  // The remainder's constant is kept in [0, divisor): floor((s1-3)/2)+1 prints as its equal below.
  EXPECT_EQ(conv.to_string(), "floor((s1+1)/2)-1");
  EXPECT_EQ(t.parse("floor((s1-3)/2)+1"), conv);
  EXPECT_EQ(t.sub(t.constant(0), t.mul(t.constant(3), s1)).to_string(), "-3*s1");
  EXPECT_EQ(t.max(s1, t.symbol("batch_size")).to_string(), "max(s1,batch_size)");
  EXPECT_FALSE(t.parse("height-").has_value());
  EXPECT_FALSE(t.parse("a b").has_value());
  EXPECT_FALSE(t.parse("floor(a,b)").has_value());
}

TEST(DimExpr, OverflowAndDivisionByZeroAreErrors) {
  SymbolTable t;
  const DimExpr big = t.constant(INT64_MAX);
  EXPECT_THROW(t.add(big, t.constant(1)), SymOverflow);
  EXPECT_THROW(t.mul(big, t.constant(2)), SymOverflow);
  EXPECT_THROW(t.mul(t.add(t.symbol("s"), big), t.constant(2)), SymOverflow);
  EXPECT_THROW(t.floor_div(t.symbol("s"), t.constant(0)), SymOverflow);
  EXPECT_THROW(t.floor_div(t.constant(INT64_MIN), t.constant(-1)), SymOverflow);
  const DimExpr s = t.symbol("s");
  EXPECT_THROW(t.evaluate(t.mul(s, s), {{"s", int64_t{1} << 40}}), SymOverflow);
}

TEST(DimExpr, UnifyMakesEqualSymbolsOne) {
  SymbolTable t;
  const DimExpr a = t.symbol("a"), b = t.symbol("b"), c = t.symbol("c");
  const DimExpr sum = t.add(b, c);
  EXPECT_TRUE(t.unify(a, b));
  EXPECT_EQ(t.resolve(b), a);
  EXPECT_EQ(t.resolve(sum), t.add(a, c));
  EXPECT_TRUE(t.unify(c, t.constant(4)));
  EXPECT_EQ(t.resolve(sum), t.add(a, t.constant(4)));
  EXPECT_FALSE(t.unify(t.constant(3), c));  // c is 4 now
  const DimExpr u = t.fresh_symbol("u", {0, 100}, true);
  EXPECT_TRUE(u.is_unbacked_symbol());
  EXPECT_EQ(u.range().hi, 100);
  EXPECT_NE(t.fresh_symbol("u"), u);
}

}  // namespace
}  // namespace graphsplit::sdk
