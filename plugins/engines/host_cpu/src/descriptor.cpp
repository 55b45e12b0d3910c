#include "graphsplit/sdk/plugin.h"
#include "host_cpu_engine.h"

namespace {

constexpr gs_option_desc kOptions[] = {
    {"max_output_elements", GS_OPT_INT, "65536", 1, 1e15, nullptr,
     "Largest output (elements) the host computes", nullptr},
};
constexpr gs_component_desc kComponents[] = {
    GS_ENGINE_COMPONENT(
        graphsplit::sdk::engine::kHostCpu.data(), "Host CPU: shape computation and small integer tensors",
        graphsplit::plugins::host_cpu::HostCpuEngine, GS_OPTIONS(kOptions), GS_PLUGIN_DATA_FILE("ops.toml")),
};

}  // namespace

GS_DEFINE_THIS_PLUGIN("0.1.0", kComponents)
