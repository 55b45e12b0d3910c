#include "host_cpu_engine.h"

namespace graphsplit::plugins::host_cpu {

HostCpuEngine::HostCpuEngine(const sdk::PluginContext& ctx)
    : kernels::KernelEngine(ctx, std::string(sdk::engine::kHostCpu)),
      max_output_elements_(ctx.options().get_int("max_output_elements", 65536)) {}

sdk::SupportVerdict HostCpuEngine::check_support(const sdk::Node& node) const {
  sdk::SupportVerdict v = check_table(node);
  if (!v.supported || node.type() == "Shape" || node.type() == "Size") return v;
  for (size_t o = 0; o < node.num_outputs(); ++o) {
    const sdk::Shape& s = node.output_desc(o).shape;
    if (s.is_static()) {
      if (*s.num_elements() > max_output_elements_) {
        return {false, sdk::ReasonCode::kSizeAboveLimit,
                "output " + std::to_string(o) + " holds " + std::to_string(*s.num_elements()) +
                    " elements; the host takes at most " + std::to_string(max_output_elements_)};
      }
    } else if (s.is_unknown_rank() || s.rank() != 1) {
      return {false, sdk::ReasonCode::kShapeUnknown,
              "output " + std::to_string(o) + " has shape " + s.to_string() +
                  "; the host takes static tensors and 1-D shape vectors"};
    }
  }
  return v;
}

}  // namespace graphsplit::plugins::host_cpu
