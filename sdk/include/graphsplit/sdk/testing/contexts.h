// Plain implementations of the host contexts for a plugin's own unit tests, which create plugin classes
// directly (no host, no dlopen). Conformance tests load the built library through the real host instead.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graphsplit/sdk/context.h"

namespace graphsplit::sdk::testing {

class TestPluginContext final : public PluginContext {
 public:
  explicit TestPluginContext(std::string name, OptionValues options = {}, OpSupportTable table = {},
                             OptionValues ge_options = {})
      : name_(std::move(name)),
        options_(std::move(options)),
        table_(std::move(table)),
        ge_(std::move(ge_options)) {}
  std::string_view component_name() const override { return name_; }
  const OptionValues& options() const override { return options_; }
  const OpSupportTable* op_table() const override { return table_.empty() ? nullptr : &table_; }
  void log(LogLevel, std::string_view message) const override { messages.emplace_back(message); }
  const OptionValues& ge_options() const override { return ge_; }
  mutable std::vector<std::string> messages;

 private:
  std::string name_;
  OptionValues options_;
  OpSupportTable table_;
  OptionValues ge_;
};

class TestPassContext final : public PassContext {
 public:
  explicit TestPassContext(OptionValues options = {}, OptionValues ge_options = {},
                           std::vector<EngineRef> engines = {})
      : options_(std::move(options)), ge_(std::move(ge_options)), engines_(std::move(engines)) {}
  const OptionValues& options() const override { return options_; }
  const OptionValues& ge_options() const override { return ge_; }
  std::vector<EngineRef> engines() const override { return engines_; }
  void log(LogLevel, std::string_view message) const override { messages.emplace_back(message); }
  Status infer_value_shapes(const InputDims& inputs, ValueDescs* out) const override {
    return infer ? infer(inputs, out) : PassContext::infer_value_shapes(inputs, out);
  }
  void record(const Decision& decision) override { decisions.push_back(decision); }
  bool keeps_decisions() const override { return true; }
  mutable std::vector<std::string> messages;
  std::vector<Decision> decisions;
  // What infer_value_shapes does; unset = unsupported, as a host without a model.
  std::function<Status(const InputDims&, ValueDescs*)> infer;

 private:
  OptionValues options_;
  OptionValues ge_;
  std::vector<EngineRef> engines_;
};

}  // namespace graphsplit::sdk::testing
