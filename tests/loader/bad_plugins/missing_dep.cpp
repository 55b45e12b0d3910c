// Needs libgs_vanishing_dep.so, which the test leaves behind when it copies this library elsewhere.
#include "common.h"

extern "C" int vanishing_dep_value();

namespace {
class UsesDep final : public graphsplit::sdk::Pass {
 public:
  explicit UsesDep(const graphsplit::sdk::PluginContext&) {}
  graphsplit::sdk::Status run(graphsplit::sdk::Graph&, graphsplit::sdk::PassContext&,
                              bool* changed) override {
    *changed = vanishing_dep_value() != 0;
    return graphsplit::sdk::Status::ok();
  }
};
constexpr gs_component_desc kComponents[] = {GS_PASS_COMPONENT("uses_dep", "", UsesDep, GS_NO_OPTIONS)};
}  // namespace

GS_DEFINE_PLUGIN("missing_dep", "1.0", kComponents)
