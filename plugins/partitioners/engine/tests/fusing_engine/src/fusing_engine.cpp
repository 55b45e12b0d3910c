// A test engine for the engine partitioner. Its optimise hook folds Relu(Relu(x)) into Relu(x), a rewrite
// that keeps the result, so that tests can see an engine's change survive the merge-back. Option `behaviour`
// makes it misbehave instead: "fail" returns an error, "throw" throws, "break" leaves a cycle behind.
#include <chrono>
#include <stdexcept>
#include <thread>

#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/plugin.h"

namespace {

using graphsplit::sdk::Graph;
using graphsplit::sdk::Node;
using graphsplit::sdk::Status;

class FusingEngine final : public graphsplit::sdk::Engine {
 public:
  explicit FusingEngine(const graphsplit::sdk::PluginContext& ctx)
      : Engine(ctx), behaviour_(ctx.options().get_string("behaviour", "fuse")) {}

  Status optimize(Graph& subgraph, graphsplit::sdk::PassContext&, bool* changed) override {
    *changed = false;
    if (behaviour_ == "fail") return Status::internal("refusing on purpose");
    if (behaviour_ == "throw") throw std::runtime_error("thrown on purpose");
    if (behaviour_ == "sleep") {  // a hook that never finishes in time (the host's --entry_timeout stops it)
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return Status::ok();
    }
    if (behaviour_ == "break") {
      std::vector<Node*> nodes = subgraph.node_list();
      if (nodes.size() >= 2) {
        // Both directions between two nodes that a path already joins: a cycle.
        (void)subgraph.add_control_edge(nodes.back(), nodes.front());
        (void)subgraph.add_control_edge(nodes.front(), nodes.back());
        *changed = true;
      }
      return Status::ok();
    }
    for (Node* outer : subgraph.node_list()) {
      if (outer->type() != "Relu" || outer->num_inputs() != 1) continue;
      const graphsplit::sdk::OutPort inner = outer->input(0);
      if (!inner.node || inner.node->type() != "Relu" || !outer->control_inputs().empty() ||
          !outer->control_outputs().empty())
        continue;
      // Every consumer of the outer Relu now reads the inner one.
      for (const graphsplit::sdk::InPort& c : std::vector<graphsplit::sdk::InPort>(outer->consumers(0))) {
        subgraph.disconnect_input(c);
        GS_RETURN_IF_ERROR(subgraph.add_edge(inner, c));
      }
      subgraph.remove_node(outer);
      *changed = true;
    }
    return Status::ok();
  }

 private:
  std::string behaviour_;
};

constexpr gs_option_desc kOptions[] = {
    {"behaviour", GS_OPT_ENUM, "\"fuse\"", 1, 0, "fuse|fail|throw|break|sleep", "What optimize() does",
     nullptr},
};
constexpr gs_component_desc kComponents[] = {
    GS_ENGINE_COMPONENT("FUSING_TEST", "Test engine: fuses Relu(Relu(x)) in its optimise hook", FusingEngine,
                        GS_OPTIONS(kOptions), GS_PLUGIN_DATA_FILE("ops.toml")),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
