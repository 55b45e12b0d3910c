// The only file of the plugin that defines its descriptor: constant data, nothing runs at load time. The
// plugin's name comes from CMake (graphsplit_add_plugin NAME), so it is written once.
#include "graphsplit/sdk/plugin.h"
#include "template_engine.h"

namespace {

// [snippet:descriptor]
constexpr gs_component_desc kComponents[] = {
    GS_ENGINE_COMPONENT(GS_PLUGIN_NAME, "Example engine: float32 Relu, Add, Mul",
                        graphsplit::examples::TemplateEngine, GS_NO_OPTIONS, GS_PLUGIN_DATA_FILE("ops.toml")),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
// [/snippet:descriptor]
