// What the host gives plugins. Both contexts are implemented by the host; references obtained from them are
// valid only during the call that received the context (design guide, section 3.7).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/types.h"
#include "graphsplit/sdk/log.h"
#include "graphsplit/sdk/op_table.h"
#include "graphsplit/sdk/options.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

class Engine;
class Graph;

// Input name -> static dims (empty = scalar).
using InputDims = std::vector<std::pair<std::string, std::vector<int64_t>>>;
// Value (tensor) name -> descriptor.
using ValueDescs = std::unordered_map<std::string, TensorDesc>;

// Given to a component's constructor.
class GS_SDK_API PluginContext {
 public:
  virtual ~PluginContext();
  virtual std::string_view component_name() const = 0;
  virtual const OptionValues& options() const = 0;
  // Engines: the table read from the engine's data file. nullptr for passes and partitioners.
  virtual const OpSupportTable* op_table() const = 0;
  virtual void log(LogLevel level, std::string_view message) const = 0;
  // The session's GE options (and graphsplit's own, sdk::option), as PassContext::ge_options. Added in SDK
  // ABI 1.1, at the end of the vtable, so that plugins built for 1.0 still load.
  virtual const OptionValues& ge_options() const = 0;
};

// An engine as the pipeline sees it, in placement order (priority, highest first; then name).
struct EngineRef {
  std::string name;
  int64_t priority = 0;
  const OpSupportTable* table = nullptr;
  Engine* engine = nullptr;
};

// Given to Pass::run and Partitioner::partition.
class GS_SDK_API PassContext {
 public:
  virtual ~PassContext();
  // This pipeline entry's options, validated against the component's schema, defaults filled in.
  virtual const OptionValues& options() const = 0;
  // GE options ([options] of the pipeline file and atc --options), under their GE names.
  virtual const OptionValues& ge_options() const = 0;
  // The enabled engines.
  virtual std::vector<EngineRef> engines() const = 0;
  virtual void log(LogLevel level, std::string_view message) const = 0;
  // The host's shape inference run again on the model being compiled, with these input shapes: the
  // descriptor of every value (by its name, as nodes' output names give it), through the same
  // operator-schema inference as the import. For passes that need each gear's static shapes. After a first
  // call returned, calls may run on several threads at once. Default, and a host without a model source:
  // unsupported.
  virtual Status infer_value_shapes(const InputDims& inputs, ValueDescs* out) const;
  // Reports a decision (SDK ABI 1.1). The host keeps every record of the compilation in order, for the
  // partition and placement reports, `atc --explain` and the debug log. Default: dropped.
  virtual void record(const Decision& decision);
  // Whether record() keeps or logs what it is given (SDK ABI 2.1): when not, a pass may skip building the
  // decisions, which for a per-node pass such as placement costs as much as the decision itself. Default:
  // false, as the default record() drops everything.
  virtual bool keeps_decisions() const;
};

}  // namespace graphsplit::sdk
