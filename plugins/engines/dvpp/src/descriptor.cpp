#include "dvpp_engine.h"
#include "graphsplit/sdk/plugin.h"

namespace {

constexpr gs_option_desc kOptions[] = {
    {"max_resolution", GS_OPT_INT, "4096", 16, 16384, nullptr, "Largest image height or width DVPP takes",
     nullptr},
    {"max_channels", GS_OPT_INT, "4", 1, 4, nullptr, "Most image channels DVPP takes", nullptr},
};
constexpr gs_component_desc kComponents[] = {
    GS_ENGINE_COMPONENT(graphsplit::sdk::engine::kDvpp.data(),
                        "DVPP: uint8 image pre-processing (resize, crop, pad, layout, cast)",
                        graphsplit::plugins::dvpp::DvppEngine, GS_OPTIONS(kOptions),
                        GS_PLUGIN_DATA_FILE("ops.toml")),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
