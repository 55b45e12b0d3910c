// The only file of the plugin that uses GS_DEFINE_PLUGIN: constant data, nothing runs at load time.
#include "graphsplit/sdk/plugin.h"
#include "template_engine.h"

namespace {

constexpr gs_component_desc kComponents[] = {
    GS_ENGINE_COMPONENT("template", "Example engine: float32 Relu, Add, Mul",
                        graphsplit::examples::TemplateEngine, GS_NO_OPTIONS, "template.ops.toml"),
};

}  // namespace

GS_DEFINE_PLUGIN("template", "0.1.0", kComponents)
