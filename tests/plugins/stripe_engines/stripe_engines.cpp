// stress.stripe_engines: re-places every operator on one of the engines that can run it, taking them in turn
// (by node position), so that neighbouring operators land on different engines wherever two engines qualify.
// The engine partitioner then cuts the graphs into as many engine subgraphs as placement allows; the runtime
// tests check that the results do not change.
#include <algorithm>

#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/pass.h"
#include "graphsplit/sdk/plugin.h"

namespace {

using namespace graphsplit;

bool structural(const std::string& type) {
  static const char* kTypes[] = {"Data", "Const", "NetOutput", "PartitionedCall", "If", "Case",
                                 "Loop", "Scan",  "NoOp",      "PlaceHolder",     "End"};
  return std::find(std::begin(kTypes), std::end(kTypes), type) != std::end(kTypes);
}

class StripeEngines final : public sdk::Pass {
 public:
  explicit StripeEngines(const sdk::PluginContext&) {}

  sdk::Status run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override {
    std::vector<sdk::EngineRef> engines = ctx.engines();
    std::sort(engines.begin(), engines.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    std::vector<sdk::Graph*> graphs = {&root};
    for (sdk::Graph* g : root.subgraphs()) graphs.push_back(g);
    *changed = false;
    for (sdk::Graph* g : graphs) {
      size_t position = 0;
      for (sdk::Node* n : g->nodes()) {
        if (structural(n->type()) || !n->attrs().has(sdk::attr::kOpEngineName)) continue;
        std::vector<const sdk::EngineRef*> able;
        for (const sdk::EngineRef& e : engines)
          if (e.engine && e.engine->check_support(*n).supported) able.push_back(&e);
        if (able.size() < 2) continue;
        const sdk::EngineRef* pick = able[position++ % able.size()];
        if (n->attrs().get_string(sdk::attr::kOpEngineName) == pick->name) continue;
        n->attrs().set(sdk::attr::kOpEngineName, sdk::AttrValue::String(pick->name));
        n->attrs().set(sdk::attr::kOpKernelLibName,
                       sdk::AttrValue::String(pick->table ? pick->table->kernel_lib() : ""));
        *changed = true;
      }
    }
    return sdk::Status::ok();
  }
};

constexpr gs_component_desc kComponents[] = {
    GS_PASS_COMPONENT("stripe_engines",
                      "Places operators on alternating capable engines (runtime stress tests)", StripeEngines,
                      GS_NO_OPTIONS),
};

}  // namespace

GS_DEFINE_PLUGIN("stress", "0.1.0", kComponents)
