#include "ai_core_engine.h"
#include "graphsplit/sdk/plugin.h"

namespace {

constexpr gs_option_desc kOptions[] = {
    {"max_rank", GS_OPT_INT, "8", 1, 8, nullptr, "Largest tensor rank the AI Core kernels take", nullptr},
};
constexpr gs_component_desc kComponents[] = {
    GS_ENGINE_COMPONENT(
        graphsplit::sdk::engine::kAiCore.data(), "AI Core: dense compute and vector ops (float16/float32)",
        graphsplit::plugins::ai_core::AiCoreEngine, GS_OPTIONS(kOptions), GS_PLUGIN_DATA_FILE("ops.toml")),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
