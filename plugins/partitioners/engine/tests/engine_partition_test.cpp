// The engine partitioner: GE's catalogue entries (EPT-xx) on split() and merge_back() directly, the whole
// plugin through the real host (optimise hooks of a real test engine, failures, nesting, composite mode), and
// a round-trip property on random DAGs.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine_partitioner.h"
#include "graphsplit/sdk/ir/topo.h"
#include "graphsplit/sdk/ir/verify.h"
#include "graphsplit/sdk/plugin.h"
#include "pipeline_testing.h"

namespace graphsplit {
namespace {

using namespace plugins::engine;
using sdk::AttrValue;
using sdk::Graph;
using sdk::Node;

const char* kAiCore = "AIcoreEngine";
const char* kAiCpu = "DNN_VM_AICPU";
const char* kGeLocal = "DNN_VM_GE_LOCAL";

Node* op(Graph& g, const std::string& name, const std::string& type, const std::vector<std::string>& inputs,
         const std::string& engine, std::vector<int64_t> dims = {2, 3}) {
  Node* n =
      testing::add_op(g, name, type, inputs, testing::tensor_desc(sdk::DataType::kFloat, std::move(dims)));
  if (!engine.empty()) n->attrs().set(sdk::attr::kOpEngineName, AttrValue::String(engine));
  return n;
}
Node* net_output(Graph& g, const std::vector<std::string>& inputs) {
  Node* n = testing::add_net_output(g, inputs);
  n->attrs().set(sdk::attr::kOpEngineName, AttrValue::String(kGeLocal));
  return n;
}

// Everything merge-back must restore: nodes by name with type, attributes, output descriptors, data inputs
// and control inputs; graph attributes but the partitioner's own bookkeeping.
std::string snapshot(const Graph& root) {
  std::vector<const Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  std::string out;
  for (const Graph* g : graphs) {
    out += "graph " + g->name() + "\n";
    for (const auto& [k, v] : g->attrs().entries()) {
      if (k != sdk::attr::kEnginePartitions && k != kPartitionCounter)
        out +=
            "  @" + k + "=" + std::to_string(v.kind() == AttrValue::Kind::kBool ? *v.as_bool() : -1) + "\n";
    }
    std::map<std::string, std::string> nodes;
    for (const Node* n : g->nodes()) {
      std::string s = n->type();
      for (const sdk::OutPort& p : n->inputs())
        s += " in:" + (p.node ? p.node->name() + ":" + std::to_string(p.index) : "-");
      std::set<std::string> ctrl;
      for (const Node* c : n->control_inputs()) ctrl.insert(c->name());
      for (const std::string& c : ctrl) s += " ctrl:" + c;
      for (size_t o = 0; o < n->num_outputs(); ++o) s += " out:" + n->output_desc(o).to_string();
      std::map<std::string, const AttrValue*> attrs;
      for (const auto& [k, v] : n->attrs().entries()) attrs[k] = &v;
      for (const auto& [k, v] : attrs) {
        s += " " + k;
        if (const std::string* str = v->as_string()) s += "=" + *str;
      }
      nodes[n->name()] = s;
    }
    for (const auto& [name, s] : nodes) out += "  " + name + ": " + s + "\n";
  }
  return out;
}

std::vector<std::string> members(const Graph& g) {
  std::vector<std::string> out;
  for (const Node* n : g.nodes()) {
    if (n->type() != sdk::op::kEnd && n->type() != sdk::op::kPlaceHolder) out.push_back(n->name());
  }
  return out;
}

std::vector<std::string> summary(const Graph& g) {
  const AttrValue* v = g.attrs().get(sdk::attr::kEnginePartitions);
  return v && v->as_strings() ? *v->as_strings() : std::vector<std::string>{};
}

// x -> a(AI Core) -> b(AI Core) -> c(AI CPU) -> d(AI Core) -> out, with w(Const) feeding d.
std::unique_ptr<Graph> mixed_chain() {
  auto g = testing::opset17_root("g");
  op(*g, "x", "Data", {}, kGeLocal);
  op(*g, "a", "Relu", {"x"}, kAiCore);
  op(*g, "b", "Relu", {"a"}, kAiCore);
  op(*g, "c", "Relu", {"b"}, kAiCpu);
  op(*g, "w", "Const", {}, kGeLocal);
  op(*g, "d", "Add", {"c", "w"}, kAiCore);
  net_output(*g, {"d"});
  return g;
}

TEST(EnginePartitionTest, Ept21MixedEnginesGiveOneSubgraphPerEngineRunAndMergeBackRestoresTheGraph) {
  auto g = mixed_chain();
  const std::string before = snapshot(*g);
  GraphPartition p;
  int64_t pairs = 0;
  ASSERT_TRUE(split(*g, Options{}, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
  EXPECT_EQ(g->num_nodes(), 0u);  // everything went out
  ASSERT_EQ(p.subgraphs.size(), 5u);
  std::vector<std::string> names, engines;
  for (const EngineSubgraph& s : p.subgraphs) {
    names.push_back(s.graph->name());
    engines.push_back(s.engine);
    EXPECT_TRUE(s.graph->is_detached());
    EXPECT_TRUE(sdk::verify_graph(*s.graph).is_ok()) << sdk::verify_graph(*s.graph).message();
  }
  EXPECT_EQ(engines, (std::vector<std::string>{"inputNodesSubGraph", kAiCore, kAiCpu, kAiCore, kGeLocal}));
  EXPECT_EQ(members(*p.subgraphs[0].graph), (std::vector<std::string>{"x", "w"}));
  EXPECT_EQ(members(*p.subgraphs[1].graph), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(members(*p.subgraphs[2].graph), (std::vector<std::string>{"c"}));
  EXPECT_EQ(members(*p.subgraphs[3].graph), (std::vector<std::string>{"d"}));
  EXPECT_EQ(members(*p.subgraphs[4].graph), (std::vector<std::string>{"out"}));
  EXPECT_EQ(names[0], "partition0_rank0_inputNodeGraph");
  EXPECT_EQ(names[1].rfind("partition0_rank1_new_sub_graph", 0), 0u) << names[1];
  // x->a, b->c, c->d, w->d, d->out: one pair per crossing edge.
  EXPECT_EQ(p.pairs, 5);
  EXPECT_EQ(pairs, 5);
  // EPT-08/09: the pair b -> c.
  const Node* ph = nullptr;
  for (const Node* n : p.subgraphs[2].graph->nodes()) {
    if (n->type() == sdk::op::kPlaceHolder) ph = n;
  }
  ASSERT_NE(ph, nullptr);
  EXPECT_EQ(ph->attrs().get_string(kParentNodeName), "b");
  EXPECT_EQ(ph->attrs().get_string(kParentOpType), "Relu");
  EXPECT_EQ(ph->attrs().get_string(kFrontEngine), kAiCore);
  EXPECT_EQ(ph->attrs().get_int(kAnchorIndex, -9), 0);
  EXPECT_EQ(ph->output_desc(0).to_string(), "float32[2,3]");
  const Node* end = p.subgraphs[1].graph->find_node(ph->attrs().get_string(kPeerNodeName));
  ASSERT_NE(end, nullptr);
  EXPECT_EQ(end->type(), "End");
  EXPECT_EQ(end->attrs().get_int(kPeerIndex, -1), ph->attrs().get_int(kPeerIndex, -2));
  EXPECT_EQ(end->attrs().get_string(kParentOpType), "Relu");
  EXPECT_EQ(end->attrs().get_string(kRearEngine), kAiCpu);
  EXPECT_EQ(end->input(0).node->name(), "b");

  ASSERT_TRUE(merge_back(p, {}, sdk::TopoSortMode::kStableRDFS).is_ok());
  EXPECT_EQ(g->subgraphs().size(), 0u);
  EXPECT_TRUE(sdk::verify(*g).is_ok());
  EXPECT_EQ(snapshot(*g), before);
  EXPECT_EQ(summary(*g).size(), 5u);
}

// An optimiser that drops an identity-like node leaves its PlaceHolder feeding the next pair's End: merging
// back must follow the chain (b now feeds d), which the one-pass join cannot; it joins pair by pair instead.
TEST(EnginePartitionTest, MergeBackFollowsAPlaceHolderThatAnOptimiserWiredIntoAnEnd) {
  auto g = mixed_chain();
  GraphPartition p;
  int64_t pairs = 0;
  ASSERT_TRUE(split(*g, Options{}, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
  Graph& cpu = *p.subgraphs[2].graph;  // PlaceHolder(b) -> c -> End(d)
  Node* ph = nullptr;
  Node* end = nullptr;
  for (Node* n : cpu.nodes()) {
    if (n->type() == sdk::op::kPlaceHolder) ph = n;
    if (n->type() == sdk::op::kEnd) end = n;
  }
  ASSERT_NE(ph, nullptr);
  ASSERT_NE(end, nullptr);
  cpu.remove_node(cpu.find_node("c"));
  ASSERT_TRUE(cpu.add_edge({ph, 0}, {end, 0}).is_ok());
  ASSERT_TRUE(merge_back(p, {}, sdk::TopoSortMode::kStableRDFS).is_ok());
  EXPECT_EQ(g->find_node("c"), nullptr);
  const Node* d = g->find_node("d");
  ASSERT_NE(d, nullptr);
  ASSERT_NE(d->input(0).node, nullptr);
  EXPECT_EQ(d->input(0).node->name(), "b");
  for (const Node* n : g->nodes())
    EXPECT_FALSE(n->type() == sdk::op::kEnd || n->type() == sdk::op::kPlaceHolder);
  const sdk::Status v = sdk::verify(*g);
  EXPECT_TRUE(v.is_ok()) << v.message();
}

TEST(EnginePartitionTest, Ept29SecondPathKeepsTwoClustersOfOneEngineApart) {
  // op1 (AI Core) -> op2 (AI CPU) -> op3 (AI Core), and op1 -> op3: merging op1 and op3 would swallow op2.
  auto g = testing::opset17_root("g");
  op(*g, "x", "Data", {}, kGeLocal);
  op(*g, "op1", "Relu", {"x"}, kAiCore);
  op(*g, "op2", "Relu", {"op1"}, kAiCpu);
  op(*g, "op3", "Add", {"op2", "op1"}, kAiCore);
  net_output(*g, {"op3"});
  GraphPartition p;
  int64_t pairs = 0;
  ASSERT_TRUE(split(*g, Options{}, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
  ASSERT_EQ(p.subgraphs.size(), 5u);  // the input graph, op1, op2, op3, NetOutput
  EXPECT_EQ(members(*p.subgraphs[1].graph), std::vector<std::string>{"op1"});
  EXPECT_EQ(members(*p.subgraphs[3].graph), std::vector<std::string>{"op3"});
  ASSERT_TRUE(merge_back(p, {}, sdk::TopoSortMode::kStableRDFS).is_ok());
}

// Beyond GE: with merge_siblings, two AI CPU readers of one AI Core node share a subgraph (no path joins
// them); GE's rule keeps them apart (each may only merge into a consumer, and their consumer is on AI Core).
// The merged-back graph is the same either way.
TEST(EnginePartitionTest, MergeSiblingsJoinsReadersOfOneClusterOnlyWhenAsked) {
  auto build = [] {
    auto g = testing::opset17_root("g");
    op(*g, "x", "Data", {}, kGeLocal);
    op(*g, "a", "Relu", {"x"}, kAiCore);
    op(*g, "s1", "Relu", {"a"}, kAiCpu);
    op(*g, "s2", "Sigmoid", {"a"}, kAiCpu);
    op(*g, "y", "Add", {"s1", "s2"}, kAiCore);
    net_output(*g, {"y"});
    return g;
  };
  for (const bool siblings : {false, true}) {
    auto g = build();
    const std::string before = snapshot(*g);
    Options options;
    options.merge_siblings = siblings;
    GraphPartition p;
    int64_t pairs = 0;
    ASSERT_TRUE(split(*g, options, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
    std::vector<std::vector<std::string>> cpu;
    for (const EngineSubgraph& s : p.subgraphs) {
      if (s.engine == kAiCpu) cpu.push_back(members(*s.graph));
    }
    if (siblings) {
      EXPECT_EQ(cpu, (std::vector<std::vector<std::string>>{{"s1", "s2"}}));
    } else {
      EXPECT_EQ(cpu, (std::vector<std::vector<std::string>>{{"s1"}, {"s2"}}));
    }
    ASSERT_TRUE(merge_back(p, {}, sdk::TopoSortMode::kStableRDFS).is_ok());
    EXPECT_EQ(snapshot(*g), before);
  }
}

TEST(EnginePartitionTest, StreamLabelsSplitOneEngineAndControlEdgesGetPairsToo) {
  auto g = testing::opset17_root("g");
  op(*g, "x", "Data", {}, kGeLocal);
  op(*g, "a", "Relu", {"x"}, kAiCore);
  op(*g, "b", "Relu", {"a"}, kAiCore)->attrs().set(sdk::attr::kStreamLabel, AttrValue::String("s1"));
  op(*g, "c", "Relu", {"b"}, kAiCore);
  net_output(*g, {"c"});
  ASSERT_TRUE(g->add_control_edge(g->find_node("a"), g->find_node("c")).is_ok());
  const std::string before = snapshot(*g);
  GraphPartition p;
  int64_t pairs = 0;
  ASSERT_TRUE(split(*g, Options{}, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
  ASSERT_EQ(p.subgraphs.size(), 5u);
  EXPECT_EQ(p.subgraphs[2].stream_label, "s1");
  EXPECT_EQ(members(*p.subgraphs[2].graph), std::vector<std::string>{"b"});
  // x->a, a->b, b->c, c->out and the control edge a->c.
  EXPECT_EQ(p.pairs, 5);
  const Node* control_ph = nullptr;
  for (const Node* n : p.subgraphs[3].graph->nodes()) {
    if (n->type() == sdk::op::kPlaceHolder && n->attrs().get_int(kAnchorIndex, 0) == -1) control_ph = n;
  }
  ASSERT_NE(control_ph, nullptr);
  EXPECT_EQ(control_ph->control_outputs().size(), 1u);
  ASSERT_TRUE(merge_back(p, {}, sdk::TopoSortMode::kStableRDFS).is_ok());
  EXPECT_EQ(snapshot(*g), before);
}

TEST(EnginePartitionTest, Ept11And33DataLikeNodesGoToTheInputGraphAndLoseTheirUserStreamLabel) {
  auto g = testing::opset17_root("g");
  op(*g, "x", "Data", {}, kGeLocal)->attrs().set(sdk::attr::kUserStreamLabel, AttrValue::String("u"));
  op(*g, "w", "Const", {}, kGeLocal);
  op(*g, "a", "Add", {"x", "w"}, kAiCore)->attrs().set(sdk::attr::kUserStreamLabel, AttrValue::String("u"));
  net_output(*g, {"a"});
  GraphPartition p;
  int64_t pairs = 0;
  ASSERT_TRUE(split(*g, Options{}, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
  ASSERT_EQ(p.subgraphs.size(), 3u);
  EXPECT_EQ(p.subgraphs[0].rank, 0);
  EXPECT_EQ(p.subgraphs[0].engine, "inputNodesSubGraph");
  EXPECT_EQ(members(*p.subgraphs[0].graph), (std::vector<std::string>{"x", "w"}));
  EXPECT_FALSE(p.subgraphs[0].graph->find_node("x")->attrs().has(sdk::attr::kUserStreamLabel));
  EXPECT_TRUE(p.subgraphs[1].graph->find_node("a")->attrs().has(sdk::attr::kUserStreamLabel));
  ASSERT_TRUE(merge_back(p, {}, sdk::TopoSortMode::kStableRDFS).is_ok());
}

TEST(EnginePartitionTest, Ept23StableModeMergesNeighboursInNodeOrder) {
  // op1 Npu -> op2 Npu -> op3 Rts -> op4 Npu, and op5 Rts -> op6 Rts -> op7 Npu -> op8 Npu, in that order.
  auto g = testing::opset17_root("g");
  op(*g, "x1", "Data", {}, kGeLocal);
  op(*g, "op1", "Relu", {"x1"}, kAiCore);
  op(*g, "op2", "Relu", {"op1"}, kAiCore);
  op(*g, "op3", "Relu", {"op2"}, kAiCpu);
  op(*g, "op4", "Relu", {"op3"}, kAiCore);
  op(*g, "x2", "Data", {}, kGeLocal);
  op(*g, "op5", "Relu", {"x2"}, kAiCpu);
  op(*g, "op6", "Relu", {"op5"}, kAiCpu);
  op(*g, "op7", "Relu", {"op6"}, kAiCore);
  op(*g, "op8", "Relu", {"op7"}, kAiCore);
  net_output(*g, {"op4", "op8"});
  Options options;
  options.stable = true;
  GraphPartition p;
  int64_t pairs = 0;
  ASSERT_TRUE(split(*g, options, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
  std::vector<std::vector<std::string>> got;
  for (size_t i = 1; i < p.subgraphs.size(); ++i) got.push_back(members(*p.subgraphs[i].graph));
  EXPECT_EQ(got, (std::vector<std::vector<std::string>>{
                     {"op1", "op2"}, {"op3"}, {"op4"}, {"op5", "op6"}, {"op7", "op8"}, {"out"}}));
  ASSERT_TRUE(merge_back(p, {}, sdk::TopoSortMode::kStableRDFS).is_ok());
}

TEST(EnginePartitionTest, Ept14EmptyGraphSplitsIntoNothing) {
  auto g = Graph::create("empty");
  GraphPartition p;
  int64_t pairs = 0;
  ASSERT_TRUE(split(*g, Options{}, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
  EXPECT_TRUE(p.subgraphs.empty());
  EXPECT_EQ(pairs, 0);
}

// A random DAG whose operators all take one engine, but for some sinks; a few data nodes, control edges, and
// now and then one operator of another engine (where the shortcut must not apply). Built from `seed` alone,
// so that two calls give the same graph.
std::unique_ptr<Graph> one_engine_dag(uint32_t seed) {
  std::mt19937 rng(seed);
  const char* engines[] = {kAiCore, kAiCpu, "DNN_VM_DVPP", kGeLocal};
  auto g = testing::opset17_root("d" + std::to_string(seed));
  const int n = 3 + static_cast<int>(rng() % 40);
  const bool foreign_op = rng() % 8 == 0;
  std::vector<int> consumers(n, 0);
  std::vector<std::vector<int>> inputs(n);
  for (int k = 0; k < n; ++k) {
    if (k == 0 || rng() % 7 == 0) continue;  // a data node
    inputs[k].push_back(static_cast<int>(rng() % k));
    if (rng() % 2) inputs[k].push_back(static_cast<int>(rng() % k));
    for (int i : inputs[k]) ++consumers[i];
  }
  for (int k = 0; k < n; ++k) {
    const std::string name = "n" + std::to_string(k);
    if (inputs[k].empty()) {
      op(*g, name, k % 2 ? "Const" : "Data", {}, kGeLocal);
      continue;
    }
    std::vector<std::string> in;
    for (int i : inputs[k]) in.push_back("n" + std::to_string(i));
    const bool sink = consumers[k] == 0;
    const char* engine = sink ? engines[rng() % 4] : (foreign_op && rng() % 4 == 0) ? kAiCpu : kAiCore;
    Node* node = op(*g, name, in.size() == 2 ? "Add" : "Relu", in, engine);
    if (rng() % 6 == 0) (void)g->add_control_edge(g->find_node("n" + std::to_string(rng() % k)), node);
  }
  return g;
}

std::string partition_text(const GraphPartition& p) {
  std::string out = std::to_string(p.pairs) + " pairs\n";
  for (const EngineSubgraph& s : p.subgraphs) {
    out += s.graph->name() + " " + s.engine + " rank " + std::to_string(s.rank) + ":";
    for (const Node* n : s.graph->nodes()) out += " " + n->name();
    out += "\n";
  }
  return out;
}

// One engine for every operator (the usual graph) takes a shortcut past the cluster engine; the parts, their
// names and their pairs must be what the cluster engine gives, with and without merge_siblings.
TEST(EnginePartitionTest, OneEngineShortcutAgreesWithTheClusterEngineOnRandomDags) {
  int differs_from_one_part = 0;
  for (uint32_t seed = 0; seed < 400; ++seed) {
    for (bool siblings : {false, true}) {
      std::string text[2];
      for (int general = 0; general < 2; ++general) {
        auto g = one_engine_dag(seed);
        Options options;
        options.merge_siblings = siblings;
        options.no_shortcut = general == 1;
        GraphPartition p;
        int64_t pairs = 0;
        ASSERT_TRUE(split(*g, options, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
        text[general] = partition_text(p);
        if (general == 1 && p.subgraphs.size() > 3) ++differs_from_one_part;
      }
      ASSERT_EQ(text[0], text[1]) << "seed " << seed << (siblings ? " with merge_siblings" : "");
    }
  }
  EXPECT_GT(differs_from_one_part, 100);  // the graphs are not all one component
}

TEST(EnginePartitionTest, RandomDagsRoundTripThroughSplitAndMergeBack) {
  std::mt19937 rng(7);
  const char* engines[] = {kAiCore, kAiCpu, "DNN_VM_DVPP", "DNN_VM_HOST_CPU"};
  for (int trial = 0; trial < 200; ++trial) {
    auto g = testing::opset17_root("r" + std::to_string(trial));
    const int n = 2 + static_cast<int>(rng() % 40);
    op(*g, "n0", "Data", {}, kGeLocal);
    for (int k = 1; k < n; ++k) {
      std::vector<std::string> in{"n" + std::to_string(rng() % k)};
      if (rng() % 2) in.push_back("n" + std::to_string(rng() % k));
      Node* node = op(*g, "n" + std::to_string(k), in.size() == 2 ? "Add" : "Relu", in, engines[rng() % 4]);
      if (rng() % 5 == 0)
        node->attrs().set(sdk::attr::kStreamLabel, AttrValue::String("s" + std::to_string(rng() % 2)));
      if (rng() % 6 == 0) (void)g->add_control_edge(g->find_node("n" + std::to_string(rng() % k)), node);
    }
    net_output(*g, {"n" + std::to_string(n - 1)});
    const std::string before = snapshot(*g);
    Options options;
    options.stable = trial % 2 == 1;
    GraphPartition p;
    int64_t pairs = 0;
    ASSERT_TRUE(split(*g, options, sdk::TopoSortMode::kStableRDFS, 0, &pairs, &p).is_ok());
    // One engine and stream label per subgraph; the subgraphs joined by their pairs form no cycle.
    std::map<int64_t, std::pair<int, int>>
        pair_ends;  // peer index -> (End's subgraph, PlaceHolder's subgraph)
    for (size_t i = 0; i < p.subgraphs.size(); ++i) {
      const Graph& s = *p.subgraphs[i].graph;
      ASSERT_TRUE(sdk::verify_graph(s).is_ok()) << sdk::verify_graph(s).message();
      std::set<std::string> keys;
      for (const Node* node : s.nodes()) {
        if (node->type() == sdk::op::kEnd)
          pair_ends[node->attrs().get_int(kPeerIndex, -1)].first = static_cast<int>(i);
        if (node->type() == sdk::op::kPlaceHolder)
          pair_ends[node->attrs().get_int(kPeerIndex, -1)].second = static_cast<int>(i);
        if (node->type() == sdk::op::kEnd || node->type() == sdk::op::kPlaceHolder ||
            p.subgraphs[i].rank == 0)
          continue;
        keys.insert(node->attrs().get_string(sdk::attr::kOpEngineName) + "/" +
                    node->attrs().get_string(sdk::attr::kStreamLabel));
      }
      EXPECT_LE(keys.size(), 1u) << "trial " << trial;
    }
    EXPECT_EQ(static_cast<int64_t>(pair_ends.size()), p.pairs);
    std::vector<std::set<int>> succ(p.subgraphs.size());
    std::vector<int> indegree(p.subgraphs.size(), 0);
    for (const auto& [index, ends] : pair_ends) {
      ASSERT_NE(ends.first, ends.second);
      if (succ[ends.first].insert(ends.second).second) ++indegree[ends.second];
    }
    std::vector<int> ready;
    for (size_t i = 0; i < indegree.size(); ++i) {
      if (indegree[i] == 0) ready.push_back(static_cast<int>(i));
    }
    size_t sorted = 0;
    while (!ready.empty()) {
      const int s = ready.back();
      ready.pop_back();
      ++sorted;
      for (int t : succ[s]) {
        if (--indegree[t] == 0) ready.push_back(t);
      }
    }
    EXPECT_EQ(sorted, p.subgraphs.size()) << "trial " << trial << ": the engine subgraphs form a cycle";
    ASSERT_TRUE(merge_back(p, {}, sdk::TopoSortMode::kStableRDFS).is_ok());
    ASSERT_TRUE(sdk::verify(*g).is_ok());
    ASSERT_EQ(snapshot(*g), before) << "trial " << trial;
  }
}

// ---- the plugin through the host

sdk::Status run_engine_partitioner(Graph& g, const std::string& engine_options = "",
                                   const std::string& partition_options = "",
                                   std::vector<std::pair<std::string, std::string>> ge = {}) {
  const std::string toml =
      "schema_version = 1\n[plugins]\nrequired = [\"partition_engine\", \"fusing_test\"]\n" +
      std::string("[engines.FUSING_TEST]\n") +
      (engine_options.empty() ? "" : "options = { " + engine_options + " }\n") +
      "[[pipeline]]\npartition = \"engine\"\n" +
      (partition_options.empty() ? "" : "options = { " + partition_options + " }\n");
  return testing::run_pipeline(g, toml, {GRAPHSPLIT_PLUGIN_DIR}, std::move(ge));
}

// x -> r1 -> r2 -> r3 (fusing engine) -> a (AI Core) -> r4 -> r5 (fusing engine) -> out.
std::unique_ptr<Graph> relu_chains() {
  auto g = testing::opset17_root("g");
  op(*g, "x", "Data", {}, kGeLocal);
  op(*g, "r1", "Relu", {"x"}, "FUSING_TEST");
  op(*g, "r2", "Relu", {"r1"}, "FUSING_TEST");
  op(*g, "r3", "Relu", {"r2"}, "FUSING_TEST");
  op(*g, "a", "Relu", {"r3"}, kAiCore);
  op(*g, "r4", "Relu", {"a"}, "FUSING_TEST");
  op(*g, "r5", "Relu", {"r4"}, "FUSING_TEST");
  net_output(*g, {"r5"});
  return g;
}

TEST(EnginePartitionPluginTest, AnEnginesOptimiseHookRewritesItsSubgraphAndTheMergedGraphShowsIt) {
  auto g = relu_chains();
  ASSERT_TRUE(run_engine_partitioner(*g).is_ok());
  // r1(r2(r3)) folds to r1, r4(r5) to r4; a now reads r1, NetOutput reads r4.
  std::vector<std::string> names;
  for (const Node* n : g->nodes()) names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "r1", "a", "r4", "out"}));
  EXPECT_EQ(g->find_node("a")->input(0).node->name(), "r1");
  EXPECT_EQ(g->find_node("out")->input(0).node->name(), "r4");
  EXPECT_TRUE(sdk::verify(*g).is_ok());
  const std::vector<std::string> s = summary(*g);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[1], "partition0_rank1_new_sub_graph1|FUSING_TEST||1");
  EXPECT_EQ(s[2], "partition0_rank2_new_sub_graph2|AIcoreEngine||1");
}

// Everything in order, ids included: node order, inputs, consumer and control lists as they are kept, and
// attributes in their order. Equal dumps mean that every later pass and the .om writer see the same graph.
std::string exact_dump(const Graph& g) {
  std::string out;
  for (const auto& [k, v] : g.attrs().entries()) {
    out += "@" + std::string(k);
    if (const auto* list = v.as_strings()) {
      for (const std::string& e : *list) out += " " + e;
    }
    out += "\n";
  }
  for (const Node* n : g.nodes()) {
    out += std::to_string(n->id()) + " " + n->name() + " " + n->type();
    for (const sdk::OutPort& p : n->inputs()) out += " in:" + (p.node ? p.node->name() : "-");
    for (const Node* c : n->control_inputs()) out += " ctrl_in:" + c->name();
    for (const Node* c : n->control_outputs()) out += " ctrl_out:" + c->name();
    for (size_t o = 0; o < n->num_outputs(); ++o) {
      for (const sdk::InPort& c : n->consumers(o)) out += " use:" + c.node->name();
    }
    for (const auto& [k, v] : n->attrs().entries()) {
      out += " " + std::string(k);
      if (const std::string* str = v.as_string()) out += "=" + *str;
    }
    out += "\n";
  }
  return out;
}

struct PlainEngine : sdk::Engine {
  using Engine::Engine;
};
struct RewritingEngine : sdk::Engine {
  using Engine::Engine;
  sdk::Status optimize(Graph&, sdk::PassContext&, bool* changed) override {
    *changed = true;
    return sdk::Status::ok();
  }
};
struct DerivedFromRewriting : RewritingEngine {
  using RewritingEngine::RewritingEngine;
};

TEST(EnginePartitionPluginTest, GsEngineComponentTellsWhetherAnEngineClassOverridesOptimize) {
  static_assert(!sdk::plugin_detail::kOverridesOptimize<PlainEngine>);
  static_assert(sdk::plugin_detail::kOverridesOptimize<RewritingEngine>);
  static_assert(sdk::plugin_detail::kOverridesOptimize<DerivedFromRewriting>);
  SUCCEED() << "checked at compile time";
}

// Engines that do not override optimize (the four shipped ones; here engines the host has not even loaded)
// get no cut: the graph is left as cutting it and merging it back would leave it, to the order of every list.
TEST(EnginePartitionPluginTest, AGraphNoEngineOptimisesIsLeftExactlyAsCuttingAndMergingBackWouldLeaveIt) {
  std::mt19937 rng(11);
  const char* engines[] = {kAiCore, kAiCpu, "DNN_VM_DVPP", "DNN_VM_HOST_CPU"};
  for (int trial = 0; trial < 120; ++trial) {
    auto make = [&](std::mt19937 r) {
      auto g = testing::opset17_root("r");
      const int n = 2 + static_cast<int>(r() % 60);
      op(*g, "n0", "Data", {}, kGeLocal);
      op(*g, "c0", "Const", {}, kGeLocal);
      for (int k = 1; k < n; ++k) {
        std::vector<std::string> in{"n" + std::to_string(r() % k)};
        if (r() % 2) in.push_back(r() % 4 ? "n" + std::to_string(r() % k) : std::string("c0"));
        Node* node = op(*g, "n" + std::to_string(k), in.size() == 2 ? "Add" : "Relu", in, engines[r() % 4]);
        if (r() % 5 == 0)
          node->attrs().set(sdk::attr::kStreamLabel, AttrValue::String("s" + std::to_string(r() % 2)));
        if (r() % 4 == 0) (void)g->add_control_edge(g->find_node("n" + std::to_string(r() % k)), node);
      }
      net_output(*g, {"n" + std::to_string(n - 1)});
      return g;
    };
    const std::mt19937 seed(rng());
    auto joined = make(seed), cut = make(seed);
    const std::string mode = std::to_string(trial % 4);  // BFS, DFS, RDFS, stable RDFS
    const std::string siblings = trial % 3 == 0 ? "merge_siblings = true, " : "";
    ASSERT_TRUE(
        run_engine_partitioner(*joined, "", siblings + "cut_always = false", {{"ge.topoSortingMode", mode}})
            .is_ok());
    ASSERT_TRUE(
        run_engine_partitioner(*cut, "", siblings + "cut_always = true", {{"ge.topoSortingMode", mode}})
            .is_ok());
    ASSERT_EQ(exact_dump(*joined), exact_dump(*cut)) << "trial " << trial << ", mode " << mode;
    EXPECT_FALSE(summary(*joined).empty());
    EXPECT_TRUE(joined->subgraphs().empty());
  }
}

// Graphs the partitioner can leave where its entry sort put them (a BFS or DFS sort would put them back): one
// main engine, sources of every kind scattered through the order (Data, Const, input-less ops of either
// engine, so that grouping by part sometimes reorders them), a few crossing edges and, in some trials,
// control edges. Leaving the graph in place must give exactly what cutting and merging back gives.
TEST(EnginePartitionPluginTest, AGraphASortWouldPutBackIsLeftInPlaceExactlyAsCuttingAndMergingBackLeavesIt) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 160; ++trial) {
    auto make = [&](std::mt19937 r) {
      auto g = testing::opset17_root("r");
      const int n = 3 + static_cast<int>(r() % 50);
      int64_t next_index = 0;
      for (int k = 0; k < n; ++k) {
        const std::string name = "n" + std::to_string(k);
        const unsigned kind = k == 0 ? 0 : r() % 12;
        const char* engine = r() % 10 == 0 ? kAiCpu : kAiCore;
        if (kind == 0) {
          op(*g, name, "Data", {}, kGeLocal)->attrs().set(sdk::attr::kIndex, AttrValue::Int(next_index++));
        } else if (kind == 1) {
          op(*g, name, "Const", {}, kGeLocal);
        } else if (kind == 2) {
          op(*g, name, "RandomNormal", {}, engine);
        } else {
          std::vector<std::string> in{"n" + std::to_string(r() % k)};
          if (r() % 2) in.push_back("n" + std::to_string(r() % k));
          Node* node = op(*g, name, in.size() == 2 ? "Add" : "Relu", in, engine);
          if (trial % 4 == 3 && r() % 6 == 0) (void)g->add_control_edge(g->find_node(in[0]), node);
        }
      }
      net_output(*g, {"n" + std::to_string(n - 1)});
      return g;
    };
    const std::mt19937 seed(rng());
    auto joined = make(seed), cut = make(seed);
    const std::string mode = std::to_string(trial % 2);  // BFS, DFS: the sorts a graph remembers
    ASSERT_TRUE(
        run_engine_partitioner(*joined, "", "cut_always = false", {{"ge.topoSortingMode", mode}}).is_ok());
    ASSERT_TRUE(
        run_engine_partitioner(*cut, "", "cut_always = true", {{"ge.topoSortingMode", mode}}).is_ok());
    ASSERT_EQ(exact_dump(*joined), exact_dump(*cut)) << "trial " << trial << ", mode " << mode;
    EXPECT_TRUE(
        sdk::is_topologically_sorted(*joined, trial % 2 ? sdk::TopoSortMode::kDFS : sdk::TopoSortMode::kBFS));
  }
}

TEST(EnginePartitionPluginTest, TheResultDoesNotDependOnTheNumberOfWorkers) {
  auto one = relu_chains(), four = relu_chains();
  ASSERT_TRUE(run_engine_partitioner(*one, "", "threads = 1").is_ok());
  ASSERT_TRUE(run_engine_partitioner(*four, "", "threads = 4").is_ok());
  EXPECT_EQ(snapshot(*one), snapshot(*four));
  EXPECT_EQ(summary(*one), summary(*four));
}

TEST(EnginePartitionPluginTest, AFailingThrowingOrGraphBreakingOptimiseHookIsReportedWithEngineAndSubgraph) {
  for (const std::string behaviour : {"fail", "throw", "break"}) {
    auto g = relu_chains();
    const sdk::Status s = run_engine_partitioner(*g, "behaviour = \"" + behaviour + "\"");
    ASSERT_FALSE(s.is_ok()) << behaviour;
    EXPECT_NE(s.message().find(
                  "engine 'FUSING_TEST' optimising subgraph 'partition0_rank1_new_sub_graph1' of graph 'g'"),
              std::string::npos)
        << s.message();
    const char* expected = behaviour == "fail"    ? "refusing on purpose"
                           : behaviour == "throw" ? "thrown on purpose"
                                                  : "left a broken subgraph";
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.message();
  }
}

TEST(EnginePartitionPluginTest, ANodeWithoutAnEngineIsAClearError) {
  auto g = mixed_chain();
  g->find_node("c")->attrs().remove(sdk::attr::kOpEngineName);
  const sdk::Status s = run_engine_partitioner(*g);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'c' (Relu) has no _op_engine_name"), std::string::npos) << s.message();
}

// An If whose branches mix engines: both branches are partitioned and merged back on their own; a branch
// marked _no_need_merge is left alone (EPT-06).
std::unique_ptr<Graph> graph_with_if(bool mark_else) {
  auto g = testing::opset17_root("g");
  op(*g, "cond", "Data", {}, kGeLocal, {});
  op(*g, "x", "Data", {}, kGeLocal);
  Node* node_if = op(*g, "if", "If", {"cond", "x"}, kGeLocal);
  net_output(*g, {"if"});
  for (const std::string branch : {"then", "else"}) {
    Graph* b = g->add_subgraph(branch, node_if);
    node_if->attrs().set(branch + "_branch", AttrValue::OfGraph(b));
    op(*b, "bx", "Data", {}, kGeLocal)->attrs().set(sdk::attr::kParentNodeIndex, AttrValue::Int(1));
    op(*b, "p", "Relu", {"bx"}, kAiCore);
    op(*b, "q", "Relu", {"p"}, kAiCpu);
    net_output(*b, {"q"});
  }
  if (mark_else) g->find_subgraph("else")->attrs().set(sdk::attr::kNoNeedMerge, AttrValue::Bool(true));
  return g;
}

TEST(EnginePartitionPluginTest, NestedBranchesArePartitionedAndMarkedGraphsAreLeftAlone) {
  auto g = graph_with_if(false);
  const std::string before = snapshot(*g);
  ASSERT_TRUE(run_engine_partitioner(*g).is_ok());
  EXPECT_EQ(snapshot(*g), before);
  EXPECT_EQ(summary(*g->find_subgraph("then")).size(), 4u);  // input graph, p, q, NetOutput
  EXPECT_EQ(summary(*g->find_subgraph("else")).size(), 4u);

  auto h = graph_with_if(true);
  ASSERT_TRUE(run_engine_partitioner(*h).is_ok());
  EXPECT_EQ(summary(*h->find_subgraph("then")).size(), 4u);
  EXPECT_TRUE(summary(*h->find_subgraph("else")).empty());
}

TEST(EnginePartitionPluginTest, CompositeModeRunsOnlyWithARegistryAndThenClustersByCompositeEngine) {
  // Without composite engines, only the atomic pass runs.
  auto g = mixed_chain();
  ASSERT_TRUE(run_engine_partitioner(*g).is_ok());
  EXPECT_EQ(g->attrs().get_int(kPartitionCounter, 0), 1);
  EXPECT_FALSE(g->find_node("a")->attrs().has(sdk::attr::kCompositeEngineName));

  // AI Core and AI CPU under one composite engine: a, b, c and d form one composite subgraph.
  auto h = mixed_chain();
  ASSERT_TRUE(
      run_engine_partitioner(*h, "",
                             "modes = [\"composite\"], composite_engines = [\"AIcoreEngine=FFTS_PLUS\", "
                             "\"DNN_VM_AICPU=FFTS_PLUS\"]")
          .is_ok());
  EXPECT_EQ(h->find_node("c")->attrs().get_string(sdk::attr::kCompositeEngineName), "FFTS_PLUS");
  const std::vector<std::string> s = summary(*h);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1], "partition0_rank1_new_sub_graph1|FFTS_PLUS||4");

  auto bad = mixed_chain();
  const sdk::Status st =
      run_engine_partitioner(*bad, "", "modes = [\"composite\"], composite_engines = [\"AIcoreEngine\"]");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("composite_engines entry 'AIcoreEngine' is not ATOMIC=COMPOSITE"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace graphsplit
