// omrun --profile's file: the recorded trace as Chrome trace-event JSON (Perfetto, chrome://tracing), names
// and shapes formatted here rather than while the model runs.
#include <cstdio>

#include "common/json.h"
#include "runtime/runtime_impl.h"

namespace graphsplit {
namespace {

// "float32[1,3,48,320], -" from the sink's pool (see TraceSink::shapes).
std::string shapes_text(const std::vector<int64_t>& pool, size_t at) {
  std::string s;
  const int64_t count = at < pool.size() ? pool[at++] : 0;
  for (int64_t k = 0; k < count && at < pool.size(); ++k) {
    if (k) s += ", ";
    const int64_t dtype = pool[at++];
    if (dtype < 0) {
      s += "-";
      continue;
    }
    s += std::string(sdk::to_string(static_cast<sdk::DataType>(dtype)));
    const int64_t rank = pool[at++];
    if (rank < 0) {
      s += "[?]";
      continue;
    }
    s += "[";
    for (int64_t i = 0; i < rank; ++i) s += (i ? "," : "") + std::to_string(pool[at++]);
    s += "]";
  }
  return s;
}

using Args = std::vector<std::pair<std::string, std::string>>;

}  // namespace

std::string Runtime::trace_json(const TraceSink& sink, const std::string& model) const {
  const std::vector<SegmentStats>& stats = impl_->stats;
  std::string j = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"model\":" + json_string(model) +
                  ",\"producer\":\"graphsplit omrun\"},\n\"traceEvents\":[\n"
                  "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":" +
                  json_string("omrun " + model) + "}}";
  char num[96];
  for (const TraceEvent& e : sink.events) {
    const SegmentStats* seg = e.index >= 0 && static_cast<size_t>(e.index) < stats.size()
                                  ? &stats[static_cast<size_t>(e.index)]
                                  : nullptr;
    std::string name, category;
    Args args;
    switch (e.kind) {
      case TraceEvent::Kind::kRun:
        name = "run " + std::to_string(e.index), category = "run";
        break;
      case TraceEvent::Kind::kSegment:
        if (!seg) continue;
        name = seg->engine + ": " + seg->first_node, category = "segment";
        args = {{"engine", seg->engine},
                {"graph", seg->graph},
                {"first_node", seg->first_node},
                {"nodes", std::to_string(seg->nodes)},
                {"arena_bytes", seg->static_shape ? std::to_string(seg->arena_bytes) : "dynamic"}};
        break;
      case TraceEvent::Kind::kControl:
        name = e.node->type() + ": " + e.node->name(), category = "control";
        args = {{"graph", e.node->owner()->name()},
                {"node", e.node->name()},
                {"engine", e.node->attrs().get_string(sdk::attr::kOpEngineName)}};
        break;
      case TraceEvent::Kind::kKernel:
        name = e.node->type() + ": " + e.node->name(), category = "kernel";
        args = {{"node", e.node->name()}, {"op", e.node->type()}};
        if (seg) args.insert(args.end(), {{"engine", seg->engine}, {"graph", seg->graph}});
        break;
    }
    if (e.kind != TraceEvent::Kind::kRun) {
      args.emplace_back("inputs", shapes_text(sink.shapes, e.inputs));
      args.emplace_back("outputs", shapes_text(sink.shapes, e.outputs));
    }
    std::snprintf(num, sizeof num, "\"ts\":%.3f,\"dur\":%.3f", e.start_us, e.duration_us);
    j += ",\n{\"name\":" + json_string(name) + ",\"cat\":\"" + category +
         "\",\"ph\":\"X\",\"pid\":1,\"tid\":1," + num + ",\"args\":{\"depth\":" + std::to_string(e.depth);
    for (const auto& [k, v] : args) j += "," + json_string(k) + ":" + json_string(v);
    j += "}}";
  }
  return j + "\n]}\n";
}

}  // namespace graphsplit
