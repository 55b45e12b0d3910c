// twin_a and twin_b both provide the partition stage "twin".
#include "common.h"

namespace {
class Twin final : public graphsplit::sdk::Partitioner {
 public:
  explicit Twin(const graphsplit::sdk::PluginContext&) {}
  graphsplit::sdk::Status partition(graphsplit::sdk::Graph&, graphsplit::sdk::PassContext&,
                                    bool* changed) override {
    *changed = false;
    return graphsplit::sdk::Status::ok();
  }
};
constexpr gs_component_desc kComponents[] = {
    GS_PARTITIONER_COMPONENT("twin", "", Twin, GS_NO_OPTIONS, "twin")};
}  // namespace

GS_DEFINE_PLUGIN(TWIN_NAME, "1.0", kComponents)
