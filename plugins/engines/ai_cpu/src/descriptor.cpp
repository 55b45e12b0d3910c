#include "ai_cpu_engine.h"
#include "graphsplit/sdk/plugin.h"

namespace {

constexpr gs_option_desc kOptions[] = {
    {"string_tensors", GS_OPT_BOOL, "true", 1, 0, nullptr, "Whether the AI CPU kernels take STRING tensors",
     nullptr},
};
constexpr gs_component_desc kComponents[] = {
    GS_ENGINE_COMPONENT(graphsplit::sdk::engine::kAiCpu.data(),
                        "AI CPU: every ONNX operator, dynamic and data-dependent shapes",
                        graphsplit::plugins::ai_cpu::AiCpuEngine, GS_OPTIONS(kOptions),
                        GS_PLUGIN_DATA_FILE("ops.toml")),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
