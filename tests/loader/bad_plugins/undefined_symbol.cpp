// Linked without -z defs on purpose: the symbol below is defined nowhere, so RTLD_NOW must fail at load.
#include "common.h"

extern "C" int graphsplit_symbol_nobody_defines();

namespace {
class Broken final : public graphsplit::sdk::Pass {
 public:
  explicit Broken(const graphsplit::sdk::PluginContext&) {}
  graphsplit::sdk::Status run(graphsplit::sdk::Graph&, graphsplit::sdk::PassContext&,
                              bool* changed) override {
    *changed = graphsplit_symbol_nobody_defines() != 0;
    return graphsplit::sdk::Status::ok();
  }
};
constexpr gs_component_desc kComponents[] = {GS_PASS_COMPONENT("broken", "", Broken, GS_NO_OPTIONS)};
}  // namespace

GS_DEFINE_PLUGIN("undefined_symbol", "1.0", kComponents)
