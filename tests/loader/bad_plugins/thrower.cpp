// A factory that throws std::runtime_error, and a pass whose run() throws 42.
#include "common.h"

namespace {
class ThrowsOnCreate final : public graphsplit::sdk::Pass {
 public:
  explicit ThrowsOnCreate(const graphsplit::sdk::PluginContext&) {
    throw std::runtime_error("cannot build the thing");
  }
  graphsplit::sdk::Status run(graphsplit::sdk::Graph&, graphsplit::sdk::PassContext&, bool*) override {
    return graphsplit::sdk::Status::ok();
  }
};
class ThrowsOnRun final : public graphsplit::sdk::Pass {
 public:
  explicit ThrowsOnRun(const graphsplit::sdk::PluginContext&) {}
  graphsplit::sdk::Status run(graphsplit::sdk::Graph&, graphsplit::sdk::PassContext&, bool*) override {
    throw 42;
  }
};
class FailsOnRun final : public graphsplit::sdk::Pass {
 public:
  explicit FailsOnRun(const graphsplit::sdk::PluginContext&) {}
  graphsplit::sdk::Status run(graphsplit::sdk::Graph& g, graphsplit::sdk::PassContext&, bool*) override {
    return graphsplit::sdk::Status::unsupported("graph '" + g.name() + "' is not to my taste");
  }
};
// Leaves an edge into a removed node's slot: the verifier must catch it when --verify_each is on.
class BreaksGraph final : public graphsplit::sdk::Pass {
 public:
  explicit BreaksGraph(const graphsplit::sdk::PluginContext&) {}
  graphsplit::sdk::Status run(graphsplit::sdk::Graph& g, graphsplit::sdk::PassContext&,
                              bool* changed) override {
    graphsplit::sdk::Node* a = g.add_node(g.unique_node_name("loop_a"), "Relu", 1, 1);
    graphsplit::sdk::Node* b = g.add_node(g.unique_node_name("loop_b"), "Relu", 1, 1);
    (void)g.add_edge({a, 0}, {b, 0});
    (void)g.add_edge({b, 0}, {a, 0});
    *changed = true;
    return graphsplit::sdk::Status::ok();
  }
};
constexpr gs_component_desc kComponents[] = {
    GS_PASS_COMPONENT("throws_on_create", "", ThrowsOnCreate, GS_NO_OPTIONS),
    GS_PASS_COMPONENT("throws_on_run", "", ThrowsOnRun, GS_NO_OPTIONS),
    GS_PASS_COMPONENT("fails_on_run", "", FailsOnRun, GS_NO_OPTIONS),
    GS_PASS_COMPONENT("breaks_graph", "", BreaksGraph, GS_NO_OPTIONS),
};
}  // namespace

GS_DEFINE_PLUGIN("thrower", "1.0", kComponents)
