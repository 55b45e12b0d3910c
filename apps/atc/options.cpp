#include "options.h"

#include <CLI/CLI.hpp>

#include <charconv>

namespace graphsplit::atc {

void register_core_options(CLI::App& app, AtcOptions& o) {
  app.add_option("--model", o.model, "Model file to convert (ONNX)");
  app.add_option("--framework", o.framework, "Framework of --model: 5 = ONNX (inferred from the extension when omitted)");
  app.add_option("--output", o.output, "Output path; '.om' is appended unless already present");
  app.add_option("--input_shape", o.input_shape,
                 "Input shapes, e.g. \"x:1,3,224,224;mask:\" (-1 = unknown dimension, empty = scalar)");
  app.add_option("--log", o.log, "Log level on stderr: debug, info, warning, error, null")->capture_default_str();
  app.add_option("--mode", o.mode, "0: convert --model to .om; 1: convert --om to JSON")->capture_default_str();
  app.add_option("--om", o.om, "With --mode=1: the .om (or .onnx) file to convert to JSON");
  app.add_option("--json", o.json, "With --mode=1: the JSON file to write");
  app.add_flag("--version", o.version, "Print the version and exit");
}

sdk::Status parse_input_shape(const std::string& text, std::vector<InputShapeOverride>* out) {
  out->clear();
  auto bad = [&](const std::string& why) {
    return sdk::Status::invalid_argument("--input_shape=\"" + text + "\": " + why);
  };
  if (text.empty()) return bad("empty value");
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(';', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty()) {
      if (end == text.size()) break;  // a trailing ';'
      return bad("empty entry between ';'");
    }
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return bad("entry '" + item + "' must be name:dims (e.g. x:1,3,224,224)");
    }
    InputShapeOverride o;
    o.name = item.substr(0, colon);
    const std::string dims = item.substr(colon + 1);
    size_t p = 0;
    while (!dims.empty() && p <= dims.size()) {
      size_t q = dims.find(',', p);
      if (q == std::string::npos) q = dims.size();
      const std::string tok = dims.substr(p, q - p);
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (tok.empty() || ec != std::errc() || ptr != tok.data() + tok.size()) {
        return bad("dimension '" + tok + "' of input '" + o.name + "' is not an integer");
      }
      if (v < -1) return bad("dimension " + tok + " of input '" + o.name + "' is negative (only -1 is allowed)");
      o.dims.push_back(v);
      p = q + 1;
    }
    for (const InputShapeOverride& prev : *out) {
      if (prev.name == o.name) return bad("input '" + o.name + "' is given twice");
    }
    out->push_back(std::move(o));
    if (end == text.size()) break;
  }
  return sdk::Status::ok();
}

}  // namespace graphsplit::atc
