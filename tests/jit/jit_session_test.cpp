// The online mode end to end: data-dependent models sliced where their shapes depend on data, outputs
// byte-identical to the offline compile run by the normal runtime, the guard-keyed cache (counts, LRU, value
// keys, the adaptive collapse, concurrency, eviction under in-flight runs) and errors that name the slice.
#include "jit/jit_session.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <future>
#include <thread>

#include "driver/compile.h"
#include "jit/jit_models.h"
#include "runtime/session.h"

namespace graphsplit::jit {
namespace {

namespace jm = graphsplit::testing::jit_models;
using sdk::Tensor;

Tensor floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kFloat;
  d.shape = sdk::Shape(std::move(dims));
  return Tensor(d, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4));
}

Tensor int64s(std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kInt64;
  d.shape = sdk::Shape(std::move(dims));
  return Tensor(d, std::string(reinterpret_cast<const char*>(v.data()), v.size() * 8));
}

std::vector<float> ramp(size_t n, float start = 1.0f) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + static_cast<float>(i);
  return v;
}

CompileRequest request(const onnx::ModelProto& m, const std::string& name) {
  CompileRequest r;
  r.model = name;
  m.SerializeToString(&r.model_bytes);
  r.pipeline = GRAPHSPLIT_DEFAULT_PIPELINE;
  r.plugin_paths = {GRAPHSPLIT_PLUGIN_DIR};
  return r;
}

JitOptions options(const onnx::ModelProto& m, const std::string& name = "jit.onnx") {
  JitOptions o;
  o.compile = request(m, name);
  return o;
}

std::unique_ptr<JitSession> open(const JitOptions& o) {
  std::unique_ptr<JitSession> s;
  const sdk::Status st = JitSession::open(o, &s);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return s;
}

// The offline path for the same model: atc's compile (no input shapes: dynamic where it must be) and the
// normal runtime.
class Reference {
 public:
  explicit Reference(const onnx::ModelProto& m) {
    Compilation c;
    const sdk::Status s = compile_model(request(m, "reference.onnx"), &c);
    EXPECT_TRUE(s.is_ok()) << s.message();
    const sdk::Status o = open_graph_session(std::move(c.root), "reference", GRAPHSPLIT_DEFAULT_PIPELINE,
                                             {GRAPHSPLIT_PLUGIN_DIR}, {}, &session_);
    EXPECT_TRUE(o.is_ok()) << o.message();
  }
  std::vector<Tensor> run(const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    const sdk::Status s = session_.runtime->run(in, &out);
    EXPECT_TRUE(s.is_ok()) << s.message();
    return out;
  }

 private:
  ModelSession session_;
};

std::vector<Tensor> run(JitSession& s, const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  const sdk::Status st = s.run(in, &out);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return out;
}

void expect_identical(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].desc().shape, b[i].desc().shape) << "output " << i;
    EXPECT_EQ(a[i].desc().dtype, b[i].desc().dtype) << "output " << i;
    EXPECT_EQ(a[i].bytes(), b[i].bytes()) << "output " << i;
  }
}

// Runs both paths on `in` and expects byte-identical outputs.
void check_against_reference(JitSession& s, Reference& ref, const std::vector<Tensor>& in) {
  expect_identical(run(s, in), ref.run(in));
}

TEST(JitSessionTest, NonZeroInTheMiddleMakesTwoSlices) {
  const auto m = jm::nonzero_middle();
  auto s = open(options(m));
  Reference ref(m);
  check_against_reference(*s, ref, {floats({2, 4}, {1, 0, -2, 3, 0, 0, 5, 6})});
  const JitStats st = s->stats();
  ASSERT_EQ(st.slices.size(), 2u);
  EXPECT_EQ(st.slices[0].cuts, (std::vector<std::string>{"nz"}));
  EXPECT_EQ(st.slices[0].slice_nodes, 2u);  // Relu, NonZero
  EXPECT_EQ(st.slices[1].parent, 0);
  EXPECT_EQ(st.slices[1].slice_nodes, 2u);  // Transpose, Cast
  EXPECT_EQ(st.compiles, 2u);
}

TEST(JitSessionTest, NonZeroCountsOfNoneOneAndAll) {
  const auto m = jm::nonzero_middle();
  auto s = open(options(m));
  Reference ref(m);
  check_against_reference(*s, ref, {floats({2, 4}, std::vector<float>(8, 0.0f))});
  check_against_reference(*s, ref, {floats({2, 4}, {0, 0, 0, 0, 0, 7, 0, 0})});
  check_against_reference(*s, ref, {floats({2, 4}, ramp(8))});
  std::vector<Tensor> out = run(*s, {floats({2, 4}, ramp(8))});
  EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{8, 2}));
}

TEST(JitSessionTest, ParallelNonZerosMakeTwoSlices) {
  const auto m = jm::parallel_nonzeros();
  auto s = open(options(m));
  Reference ref(m);
  check_against_reference(*s, ref, {floats({3}, {1, 0, 2}), floats({2, 2}, {0, 1, 1, 1})});
  const JitStats st = s->stats();
  ASSERT_EQ(st.slices.size(), 2u);
  EXPECT_EQ(st.slices[0].cuts, (std::vector<std::string>{"na", "nb"}));
}

TEST(JitSessionTest, AConcatOfTwoHundredNonZerosIsOneCutEach) {
  const auto m = jm::concat_of_nonzeros(200);
  auto s = open(options(m));
  Reference ref(m);  // offline, the concatenated size is a symbol standing for the sum of 200 counts
  check_against_reference(*s, ref, {floats({8}, ramp(8))});
  // x - i is zero once for i in 1..8: 200 * 8 - 8 positions.
  EXPECT_EQ(run(*s, {floats({8}, ramp(8))})[0].desc().shape.dims(), (std::vector<int64_t>{1, 1592}));
  const JitStats st = s->stats();
  ASSERT_EQ(st.slices.size(), 2u);
  EXPECT_EQ(st.slices[0].cuts.size(), 200u);
  EXPECT_EQ(st.slices[0].cuts[199], "nz199");  // node order, as for two
}

TEST(JitSessionTest, AChainOfKDataDependentOperatorsMakesKPlusOneSlices) {
  for (int k : {1, 2, 3}) {
    const auto m = jm::nonzero_chain(k);
    auto s = open(options(m));
    Reference ref(m);
    check_against_reference(*s, ref, {floats({5}, {0, 1, 0, 2, 3})});
    EXPECT_EQ(s->stats().slices.size(), static_cast<size_t>(k + 1)) << "k = " << k;
  }
}

TEST(JitSessionTest, AnIfWhoseBranchesAgreeAddsNoCut) {
  const auto m = jm::data_if(true);
  auto s = open(options(m));
  Reference ref(m);
  check_against_reference(*s, ref, {floats({2, 4}, ramp(8))});
  check_against_reference(*s, ref, {floats({2, 4}, ramp(8, -20.0f))});
  EXPECT_EQ(s->stats().slices.size(), 1u);
}

TEST(JitSessionTest, AnIfOnADataConditionWithDisagreeingBranchesCutsAfterIt) {
  const auto m = jm::data_if(false);
  auto s = open(options(m));
  Reference ref(m);
  check_against_reference(*s, ref, {floats({2, 4}, ramp(8))});
  check_against_reference(*s, ref, {floats({2, 4}, ramp(8, -20.0f))});
  const JitStats st = s->stats();
  ASSERT_EQ(st.slices.size(), 2u);
  EXPECT_EQ(st.slices[0].cuts, (std::vector<std::string>{"chosen"}));
  // The two ways give different shapes after the cut: two variants of the second slice.
  EXPECT_EQ(st.slices[1].compiles, 2u);
}

TEST(JitSessionTest, NonZeroFeedingShapeOperatorsIsSpecialisedAfterTheCut) {
  const auto m = jm::nonzero_feeds_shapes();
  JitOptions o = options(m);
  o.cut = CutPolicy::kData;  // three counts: the auto policy would leave the count dynamic at the third
  auto s = open(o);
  Reference ref(m);
  for (const auto& x :
       {std::vector<float>{0, 0, 0}, std::vector<float>{0, 4, 0}, std::vector<float>{1, 2, 3}})
    check_against_reference(*s, ref, {floats({3}, x)});
  const JitStats st = s->stats();
  ASSERT_EQ(st.slices.size(), 2u);
  EXPECT_EQ(st.slices[0].cuts, (std::vector<std::string>{"nz"}));
}

TEST(JitSessionTest, ALoopWithADataTripCountIsACut) {
  const auto m = jm::data_loop();
  auto s = open(options(m));
  Reference ref(m);
  check_against_reference(*s, ref, {floats({4}, {1, -1, 2, 3})});
  check_against_reference(*s, ref, {floats({4}, {-1, -1, -2, -3})});
  std::vector<Tensor> out = run(*s, {floats({4}, {1, -1, 2, 3})});
  EXPECT_EQ(out[0].desc().shape.dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(s->stats().slices.size(), 2u);
}

TEST(JitSessionTest, CompressUniqueAndTopKWithADataKCutOneAfterAnother) {
  const auto m = jm::compress_unique_topk();
  JitOptions o = options(m);
  o.cut = CutPolicy::kData;
  auto s = open(o);
  Reference ref(m);
  check_against_reference(*s, ref, {floats({6}, {3, -1, 3, 2, 0, 5})});
  check_against_reference(*s, ref, {floats({6}, {-3, -1, -3, -2, 0, -5})});  // nothing kept: k = 0
  check_against_reference(*s, ref, {floats({6}, {1, 1, 1, 1, 1, 1})});
  const JitStats st = s->stats();
  ASSERT_GE(st.slices.size(), 3u);
  EXPECT_EQ(st.slices[0].cuts, (std::vector<std::string>{"kept"}));
  EXPECT_EQ(st.slices[1].cuts, (std::vector<std::string>{"uniq"}));
}

TEST(JitSessionTest, ANonZeroNestedInABranchCutsAfterTheIf) {
  const auto m = jm::nonzero_in_a_branch();
  auto s = open(options(m));
  Reference ref(m);
  check_against_reference(*s, ref, {floats({5}, {0, 2, 0, 3, 1})});     // then: NonZero, 3 elements
  check_against_reference(*s, ref, {floats({5}, {0, -2, 0, -3, -1})});  // else: 5 elements
  const JitStats st = s->stats();
  ASSERT_EQ(st.slices.size(), 2u);
  EXPECT_EQ(st.slices[0].cuts, (std::vector<std::string>{"chosen"}));
}

TEST(JitSessionTest, ASecondRunWithTheSameShapesInfersAndCompilesNothing) {
  const auto m = jm::nonzero_middle();
  auto s = open(options(m));
  run(*s, {floats({3, 4}, ramp(12))});
  const JitStats before = s->stats();
  run(*s, {floats({3, 4}, ramp(12, 5.0f))});
  const JitStats after = s->stats();
  EXPECT_EQ(after.inferences, before.inferences);
  EXPECT_EQ(after.compiles, before.compiles);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 2);
  EXPECT_TRUE(s->probe({floats({3, 4}, ramp(12))}));
  EXPECT_FALSE(s->probe({floats({4, 4}, ramp(16))}));
}

TEST(JitSessionTest, ASequenceABACCompilesExactlyWhatIsNew) {
  const auto m = jm::nonzero_middle();
  JitOptions o = options(m);
  o.cut = CutPolicy::kData;
  auto s = open(o);
  Reference ref(m);
  const std::vector<int64_t> rows = {2, 3, 2, 5};  // all elements positive: the cut's size follows N
  const std::vector<uint64_t> compiles = {2, 4, 4, 6};
  for (size_t i = 0; i < rows.size(); ++i) {
    check_against_reference(*s, ref, {floats({rows[i], 4}, ramp(static_cast<size_t>(rows[i] * 4)))});
    EXPECT_EQ(s->stats().compiles, compiles[i]) << "run " << i;
  }
  const JitStats st = s->stats();
  EXPECT_EQ(st.cache_hits, 2u);
  ASSERT_EQ(st.misses.size(), 6u);
  EXPECT_EQ(st.misses[0].symbol, "first run");
  EXPECT_EQ(st.misses[2].slice, 0);
  EXPECT_EQ(st.misses[2].symbol, "x.dim[0] (N)");
  EXPECT_EQ(st.misses[2].before, "2");
  EXPECT_EQ(st.misses[2].after, "3");
}

TEST(JitSessionTest, TheCacheKeepsTheMostRecentlyUsedVariants) {
  const auto m = jm::plain();
  JitOptions o = options(m);
  o.cache_per_slice = 2;
  o.cut = CutPolicy::kData;  // no adaptive rule: every N is specialised
  auto s = open(o);
  for (int64_t n : {1, 2, 1, 3, 2}) run(*s, {floats({n, 4}, ramp(static_cast<size_t>(n * 4)))});
  JitStats st = s->stats();
  EXPECT_EQ(st.compiles, 4u);
  EXPECT_EQ(st.evictions, 2u);
  ASSERT_EQ(st.slices.size(), 1u);
  EXPECT_EQ(st.slices[0].variants, (std::vector<std::vector<int64_t>>{{2}, {3}}));
  run(*s, {floats({3, 4}, ramp(12))});
  EXPECT_EQ(s->stats().compiles, 4u);
}

TEST(JitSessionTest, ADimensionThatKeepsChangingIsLeftDynamicAfterThreeVariants) {
  const auto m = jm::nonzero_middle();
  auto s = open(options(m));  // auto policy, dynamic_after 2
  Reference ref(m);
  for (int64_t n = 1; n <= 40; ++n)
    check_against_reference(*s, ref, {floats({n, 4}, ramp(static_cast<size_t>(n * 4), -40.0f))});
  const JitStats st = s->stats();
  for (const JitSliceStats& p : st.slices) EXPECT_LE(p.compiles, 3u) << "slice " << p.id;
  EXPECT_LE(st.compiles, 6u);
  bool left_dynamic = false;
  for (const std::string& c : st.collapsed)
    left_dynamic |= c.find("input 'x' dim 0: took 3 values") != std::string::npos;
  EXPECT_TRUE(left_dynamic);
  EXPECT_EQ(st.slices[0].variants.front(), (std::vector<int64_t>{-1}));
}

TEST(JitSessionTest, TheSameDimsWithADifferentShapeValueMiss) {
  const auto m = jm::reshape_by_input();
  auto s = open(options(m));
  Reference ref(m);
  check_against_reference(*s, ref, {floats({3, 4}, ramp(12, -5.0f)), int64s({2}, {2, 6})});
  check_against_reference(*s, ref, {floats({3, 4}, ramp(12, -5.0f)), int64s({2}, {6, 2})});
  const JitStats st = s->stats();
  EXPECT_EQ(st.compiles, 2u);
  ASSERT_EQ(st.misses.size(), 2u);
  EXPECT_EQ(st.misses[1].symbol, "shape.value[0]");
  EXPECT_EQ(st.slices.size(), 1u);  // the value is bound: the Reshape is static, no cut
}

TEST(JitSessionTest, ACutWhoseSizeKeepsChangingIsCompiledDynamicallyFromThen) {
  const auto m = jm::nonzero_middle();
  JitOptions o = options(m);
  o.dynamic_after = 2;
  auto s = open(o);
  Reference ref(m);
  // x keeps its shape; the number of positive elements changes on every run.
  for (int positives : {3, 5, 7, 9, 11, 13}) {
    std::vector<float> x(16, -1.0f);
    for (int i = 0; i < positives; ++i) x[i] = 1.0f + static_cast<float>(i);
    check_against_reference(*s, ref, {floats({4, 4}, x)});
  }
  const JitStats st = s->stats();
  // Slice 0 once, slice 1 for three counts, then slice 0 again with the cut merged away; nothing after.
  EXPECT_EQ(st.compiles, 5u);
  // At the third count the cut after 'nz' is merged away (seen after slice 0 ran), and slice 1, about to
  // compile for it, leaves that dimension dynamic.
  ASSERT_EQ(st.collapsed.size(), 2u);
  EXPECT_NE(st.collapsed[0].find("cut after 'nz'"), std::string::npos) << st.collapsed[0];
  EXPECT_NE(st.collapsed[1].find("slice 1 input 'nz' dim 1"), std::string::npos) << st.collapsed[1];
  EXPECT_EQ(st.slices[0].cuts, std::vector<std::string>{});
}

TEST(JitSessionTest, AShapeValueThatKeepsChangingIsNoLongerKeyed) {
  const auto m = jm::reshape_by_input();
  auto s = open(options(m));  // auto policy, dynamic_after 2
  Reference ref(m);
  const std::vector<std::vector<int64_t>> targets = {{2, 6}, {6, 2}, {4, 3}, {12, 1}, {1, 12}, {3, 4}};
  for (const auto& t : targets)
    check_against_reference(*s, ref, {floats({3, 4}, ramp(12, -5.0f)), int64s({2}, t)});
  const JitStats st = s->stats();
  // Two keyed values; then one variant for every value, cutting after the Reshape (its size is data now);
  // then, that cut's sizes having taken three values, one variant with the cut merged away.
  EXPECT_EQ(st.slices[0].compiles, 4u);
  EXPECT_TRUE(st.slices[0].cuts.empty());
  bool unkeyed = false;
  for (const std::string& c : st.collapsed)
    unkeyed |=
        c.find("slice 0 input 'shape': took 3 values; its value is no longer keyed") != std::string::npos;
  EXPECT_TRUE(unkeyed);
  // Without the value the Reshape's output size is data: it cuts, and the next point leaves its dims open
  // too.
  ASSERT_EQ(st.slices.size(), 2u);
  EXPECT_LE(st.slices[1].compiles, 3u);
}

TEST(JitSessionTest, AFailedCompileIsReportedAndTriedAgain) {
  const auto m = jm::reshape_by_input();
  auto s = open(options(m));
  std::vector<Tensor> out;
  for (int i = 0; i < 2; ++i) {
    const sdk::Status st = s->run({floats({3, 4}, ramp(12)), int64s({2}, {5, 5})}, &out);
    ASSERT_FALSE(st.is_ok());
    EXPECT_NE(st.message().find("jit.onnx: slice 0"), std::string::npos) << st.message();
  }
  EXPECT_EQ(s->stats().slices[0].failed, 2u);
  run(*s, {floats({3, 4}, ramp(12)), int64s({2}, {4, 3})});
  EXPECT_EQ(s->stats().compiles, 1u);
}

TEST(JitSessionTest, ThreadsOnOneNewKeyCompileItOnce) {
  const auto m = jm::plain();
  auto s = open(options(m));
  Reference ref(m);
  const std::vector<Tensor> in = {floats({7, 4}, ramp(28, -10.0f))};
  const std::vector<Tensor> want = ref.run(in);
  std::vector<std::thread> threads;
  std::vector<std::vector<Tensor>> got(4);
  for (int t = 0; t < 4; ++t) threads.emplace_back([&, t] { ASSERT_TRUE(s->run(in, &got[t]).is_ok()); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) expect_identical(g, want);
  EXPECT_EQ(s->stats().compiles, 1u);
  EXPECT_EQ(s->stats().cache_misses, 1u);
}

// A compile is held inside its pipeline (the after-entry hook waits) while another thread runs hits on a key
// already compiled: the hits complete while the compile is still in progress.
TEST(JitSessionTest, HitsRunWhileAnotherKeyIsCompiling) {
  JitOptions o = options(jm::plain());
  std::mutex m;
  std::condition_variable cv;
  bool hold = false, held = false, release = false;
  o.compile.after_entry = [&](const EntryReport&, size_t, size_t) {
    std::unique_lock<std::mutex> lock(m);
    if (hold && !held) {
      held = true;
      cv.notify_all();
      cv.wait(lock, [&] { return release; });
    }
    return sdk::Status::ok();
  };
  auto s = open(o);
  const std::vector<Tensor> known = {floats({2, 4}, ramp(8))};
  run(*s, known);
  {
    std::lock_guard<std::mutex> lock(m);
    hold = true;
  }
  std::thread compiling([&] { run(*s, {floats({9, 4}, ramp(36))}); });
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return held; });
  }
  auto hits = std::async(std::launch::async, [&] {
    for (int i = 0; i < 20; ++i) run(*s, known);
  });
  const bool done = hits.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  EXPECT_TRUE(done) << "hits waited for another key's compile";
  {
    std::lock_guard<std::mutex> lock(m);
    release = true;
  }
  cv.notify_all();
  compiling.join();
  hits.wait();
  EXPECT_EQ(s->stats().cache_hits, 20u);
  EXPECT_EQ(s->stats().compiles, 2u);
}

TEST(JitSessionTest, EvictionDuringRunsInFlightKeepsTheirVariantsAlive) {
  const auto m = jm::nonzero_middle();
  JitOptions o = options(m);
  o.cache_bytes = 1;  // every new variant evicts the others
  o.cut = CutPolicy::kData;
  auto s = open(o);
  Reference ref(m);
  std::vector<std::vector<Tensor>> want;
  for (int64_t n = 1; n <= 4; ++n)
    want.push_back(ref.run({floats({n, 4}, ramp(static_cast<size_t>(n * 4), -3.0f))}));
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const int64_t n = 1 + (t + i) % 4;
        std::vector<Tensor> out;
        if (!s->run({floats({n, 4}, ramp(static_cast<size_t>(n * 4), -3.0f))}, &out).is_ok()) {
          ++mismatches;
          continue;
        }
        if (out[0].bytes() != want[n - 1][0].bytes() || out[1].bytes() != want[n - 1][1].bytes())
          ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_GT(s->stats().evictions, 0u);
}

TEST(JitSessionTest, AKernelErrorInTheSecondSliceNamesTheSliceAndTheNode) {
  const auto m = jm::gather_after_nonzero();
  auto s = open(options(m));
  run(*s, {floats({3}, {1, 1, 1})});  // indices 0..2: in range
  std::vector<Tensor> out;
  const sdk::Status st = s->run({floats({5}, {1, 1, 1, 1, 1})}, &out);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("jit.onnx: slice 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("node 'y' (Gather)"), std::string::npos) << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos);
}

TEST(JitSessionTest, TheReportDependsOnlyOnTheModelAndTheInputs) {
  const auto m = jm::nonzero_middle();
  std::string reports[2];
  for (std::string& r : reports) {
    auto s = open(options(m));
    for (int64_t n : {2, 3, 2}) run(*s, {floats({n, 4}, ramp(static_cast<size_t>(n * 4), -2.0f))});
    r = s->report_json(false);
  }
  EXPECT_EQ(reports[0], reports[1]);
  EXPECT_NE(reports[0].find("\"slices\": ["), std::string::npos);
  EXPECT_NE(reports[0].find("\"cache_hits\": 2"), std::string::npos) << reports[0];
  EXPECT_EQ(reports[0].find("compile_ms"), std::string::npos);
}

TEST(JitSessionTest, APlanShowsTheFirstSliceWithoutCompiling) {
  const auto m = jm::nonzero_middle();
  auto s = open(options(m));
  JitPlan p;
  ASSERT_TRUE(s->plan({floats({2, 4}, ramp(8))}, &p).is_ok());
  EXPECT_EQ(p.slice_nodes, 2u);
  EXPECT_EQ(p.remaining_nodes, 2u);
  EXPECT_EQ(p.cuts, (std::vector<std::string>{"nz"}));
  EXPECT_EQ(s->stats().compiles, 0u);
}

TEST(JitSessionTest, CutPolicyNeverMakesOneSliceWithDynamicSegments) {
  const auto m = jm::nonzero_chain(2);
  JitOptions o = options(m);
  o.cut = CutPolicy::kNever;
  auto s = open(o);
  Reference ref(m);
  check_against_reference(*s, ref, {floats({4}, {0, 3, 0, 1})});
  EXPECT_EQ(s->stats().slices.size(), 1u);
}

TEST(JitSessionTest, BadSettingsAreOneLineErrors) {
  JitOptions o = options(jm::plain());
  o.dynamic_after = -1;
  std::unique_ptr<JitSession> s;
  sdk::Status st = JitSession::open(o, &s);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.message(), "--jit_dynamic_after must not be negative");
  o = options(jm::plain());
  o.compile.model_bytes = "not a model";
  st = JitSession::open(o, &s);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("jit.onnx"), std::string::npos) << st.message();
  EXPECT_EQ(s, nullptr);
  for (const auto& [cache, bytes, text] :
       {std::tuple<size_t, int64_t, const char*>{0, 1, "--jit_cache must be at least 1"},
        std::tuple<size_t, int64_t, const char*>{1, -1, "--jit_cache_bytes must not be negative"}}) {
    o = options(jm::plain());
    o.cache_per_slice = cache;
    o.cache_bytes = bytes;
    st = JitSession::open(o, &s);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.message(), text);
  }
  o = options(jm::plain());
  auto ok = open(o);
  std::vector<Tensor> out;
  st = ok->run({}, &out);
  EXPECT_EQ(st.message(), "jit.onnx: the model takes 1 inputs, got 0");
}

}  // namespace
}  // namespace graphsplit::jit
