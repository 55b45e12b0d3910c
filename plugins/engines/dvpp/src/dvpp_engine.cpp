#include "dvpp_engine.h"

#include <algorithm>

namespace graphsplit::plugins::dvpp {

DvppEngine::DvppEngine(const sdk::PluginContext& ctx)
    : kernels::KernelEngine(ctx, std::string(sdk::engine::kDvpp)),
      max_resolution_(ctx.options().get_int("max_resolution", 4096)),
      max_channels_(ctx.options().get_int("max_channels", 4)) {}

sdk::SupportVerdict DvppEngine::check_image(const sdk::TensorDesc& d, const std::string& what) const {
  if (d.shape.is_unknown_rank() || d.shape.rank() != 4) {
    return {false, sdk::ReasonCode::kEngineCheckFailed, what + " is not a 4-D image: " + d.shape.to_string()};
  }
  if (!d.shape.is_static()) {
    return {false, sdk::ReasonCode::kEngineCheckFailed,
            what + " has dynamic sizes " + d.shape.to_string() + "; DVPP needs static image sizes"};
  }
  const auto& s = d.shape.dims();
  // NCHW (channels in dim 1) or NHWC (channels in dim 3): the smaller of the two is the channel count.
  const bool nchw = s[1] <= s[3];
  const int64_t channels = nchw ? s[1] : s[3];
  const int64_t h = nchw ? s[2] : s[1], w = nchw ? s[3] : s[2];
  if (channels > max_channels_) {
    return {false, sdk::ReasonCode::kEngineCheckFailed,
            what + " has " + std::to_string(channels) + " channels; DVPP takes at most " +
                std::to_string(max_channels_)};
  }
  if (h > max_resolution_ || w > max_resolution_) {
    return {false, sdk::ReasonCode::kEngineCheckFailed,
            what + " is " + std::to_string(h) + "x" + std::to_string(w) + "; DVPP takes at most " +
                std::to_string(max_resolution_) + "x" + std::to_string(max_resolution_)};
  }
  return {true, sdk::ReasonCode::kOk, {}};
}

sdk::SupportVerdict DvppEngine::check_support(const sdk::Node& node) const {
  sdk::SupportVerdict v = check_table(node);
  if (!v.supported) return v;
  const sdk::TensorDesc* in = node.num_inputs() ? node.input_desc(0) : nullptr;
  if (!in) return {false, sdk::ReasonCode::kEngineCheckFailed, "input 0 is not connected"};
  if (auto r = check_image(*in, "input 0"); !r.supported) return r;
  if (auto r = check_image(node.output_desc(0), "output 0"); !r.supported) return r;
  if (node.type() == "Resize") {
    const std::string mode = node.attrs().get_string("mode", "nearest");
    if (mode != "nearest" && mode != "linear") {
      return {false, sdk::ReasonCode::kEngineCheckFailed,
              "Resize mode '" + mode + "'; DVPP does nearest and linear"};
    }
    const auto& a = in->shape.dims();
    const auto& b = node.output_desc(0).shape.dims();
    for (size_t i = 0; i < 4; ++i) {
      if (a[i] == 0 || b[i] == 0) continue;
      const double scale = static_cast<double>(b[i]) / static_cast<double>(a[i]);
      if (scale > 16.0 || scale < 1.0 / 32.0) {
        return {false, sdk::ReasonCode::kEngineCheckFailed,
                "Resize scale " + std::to_string(scale) + " on axis " + std::to_string(i) +
                    " is outside [1/32, 16]"};
      }
    }
  }
  return v;
}

}  // namespace graphsplit::plugins::dvpp
