#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "graphsplit/sdk/engine.h"
#include "graphsplit/sdk/strings.h"
#include "placement.h"

namespace graphsplit::plugins::placement {
namespace {

using sdk::AttrValue;
using sdk::Status;

// ge.exec.exclude_engines names -> engine names. Engines graphsplit has no plugin for are accepted and match
// nothing; a third-party engine can also be excluded by its own name.
const std::map<std::string, std::string>& exclude_names() {
  static const auto* names = new std::map<std::string, std::string>{
      {"AiCore", std::string(sdk::engine::kAiCore)},
      {"AiVector", std::string(sdk::engine::kVectorCore)},
      {"Dsa", "DSAEngine"},
      {"Dvpp", std::string(sdk::engine::kDvpp)},
      {"AiCpuAscend", std::string(sdk::engine::kAiCpuAscend)},
      {"AiCpu", std::string(sdk::engine::kAiCpu)},
      {"HostCpu", std::string(sdk::engine::kHostCpu)},
      {"Hccl", "DNN_HCCL"},
      {"FftsPlus", "DNN_VM_FFTS_PLUS"},
  };
  return *names;
}

Status excluded_engines(const sdk::PassContext& ctx, std::set<std::string>* out) {
  const std::vector<sdk::EngineRef> engines = ctx.engines();
  const std::string list = ctx.ge_options().get_string("ge.exec.exclude_engines");
  for (const std::string& name : sdk::split(list, '|')) {
    if (name.empty()) continue;
    if (auto it = exclude_names().find(name); it != exclude_names().end()) {
      out->insert(it->second);
    } else if (std::any_of(engines.begin(), engines.end(),
                           [&](const sdk::EngineRef& e) { return e.name == name; })) {
      out->insert(name);
    } else {
      std::string allowed;
      for (const auto& [k, v] : exclude_names()) allowed += (allowed.empty() ? "" : ", ") + k;
      return Status::invalid_argument("E10001: ge.exec.exclude_engines names '" + name +
                                      "', which is not an engine; use " + allowed +
                                      " or an engine's own name");
    }
  }
  // ge.engineType: "VectorCore" excludes AI Core; any other value, unset included, excludes the vector
  // engine.
  const bool vector_core = ctx.ge_options().get_string("ge.engineType") == "VectorCore";
  out->insert(std::string(vector_core ? sdk::engine::kAiCore : sdk::engine::kVectorCore));
  return Status::ok();
}

std::string describe_io(const sdk::Node& n) {
  std::string s = "[inputs: ";
  for (size_t i = 0; i < n.num_inputs(); ++i) {
    const sdk::TensorDesc* d = n.input_desc(i);
    s += (i ? ", " : "") + (d ? d->to_string() : std::string("none"));
  }
  s += "; outputs: ";
  for (size_t o = 0; o < n.num_outputs(); ++o) s += (o ? ", " : "") + n.output_desc(o).to_string();
  return s + "]";
}

std::string where(const sdk::Node& n) {
  return "node '" + n.name() + "' (" + n.type() + ") in graph '" + n.owner()->name() + "' " + describe_io(n);
}

struct Candidate {
  const sdk::EngineRef* engine;
  int64_t cost;
  bool excluded;  // by ge.exec.exclude_engines or ge.engineType; the user's own choice ignores it
};

// The string attributes placement reads, found in one walk over the node's list instead of a lookup each;
// empty when absent or not a string. They view the list: gone once an attribute is set.
struct Seen {
  std::string_view engine, lx_engine, lx_kernel, spec_engine, spec_kernel;
};

// The keys, interned once per pass: compared as pointers, five per attribute cost less than string compares.
struct SeenKeys {
  sdk::AttrKey engine{sdk::attr::kOpEngineName}, lx_engine{sdk::attr::kLxfusionEngineName},
      lx_kernel{sdk::attr::kLxfusionOpKernelLibName}, spec_engine{sdk::attr::kSpecifiedEngineName},
      spec_kernel{sdk::attr::kSpecifiedKernelLibName}, kernel{sdk::attr::kOpKernelLibName};
};

// The string `key` holds in `attrs`: empty when absent or not a string.
std::string_view string_at(const sdk::AttrMap& attrs, sdk::AttrKey key) {
  const AttrValue* v = attrs.get(key);
  const std::string* s = v ? v->as_string() : nullptr;
  return s ? std::string_view(*s) : std::string_view();
}

Seen seen(const sdk::Node& n, const SeenKeys& k) {
  Seen s;
  for (const sdk::AttrMap::Entry& e : n.attrs().entries()) {
    const std::string* v = e.second.as_string();
    if (!v) continue;
    if (e.first == k.engine) {
      s.engine = *v;
    } else if (e.first == k.lx_engine) {
      s.lx_engine = *v;
    } else if (e.first == k.lx_kernel) {
      s.lx_kernel = *v;
    } else if (e.first == k.spec_engine) {
      s.spec_engine = *v;
    } else if (e.first == k.spec_kernel) {
      s.spec_kernel = *v;
    }
  }
  return s;
}

class Placer {
 public:
  Placer(sdk::PassContext& ctx, bool stop_on_no_dynamic_shape, bool record, bool record_kept)
      : ctx_(ctx),
        engines_(ctx.engines()),
        stop_(stop_on_no_dynamic_shape),
        // Nothing is built for a host that drops every decision (atc without a report): the records were a
        // quarter of placement's instructions per node.
        keep_(ctx.keeps_decisions()),
        record_(record && keep_),
        record_kept_(record_kept && keep_) {}

  Status init() {
    GS_RETURN_IF_ERROR(excluded_engines(ctx_, &excluded_));
    host_exec_ = ctx_.ge_options().get_string("ge.exec.placement") == "HOST";
    return Status::ok();
  }

  Status place(sdk::Node& n, bool* changed) {
    const Seen s = seen(n, seen_keys_);
    // Rule 1: an engine already chosen stays.
    if (!s.engine.empty()) return keep(n, s);
    // Rule 2: both lx attributes name the engine and kernel; one alone counts as absent.
    if (!s.lx_engine.empty() && !s.lx_kernel.empty()) {
      return assign(n, std::string(s.lx_engine), std::string(s.lx_kernel), sdk::ReasonCode::kLxfusion, {},
                    changed);
    }
    if (is_structural(n.type())) {
      return assign(n, std::string(sdk::engine::kGeLocal), std::string(sdk::engine::kGeLocalKernelLib),
                    sdk::ReasonCode::kStructural, {}, changed);
    }
    if (!n.subgraphs().empty()) return place_composite(n, changed);
    return place_by_candidates(n, s, changed);
  }

 private:
  // One engine's answer on the way to the decision (recorded with record_verdicts).
  struct Verdict {
    std::string engine;
    sdk::ReasonCode code;
    std::string detail;
  };

  // Two records per node: one Decision is reused so that recording allocates nothing once warm.
  void record(const sdk::Node& n, sdk::ReasonCode code, const std::string& engine, const std::string& detail,
              bool final = true) {
    sdk::Decision& d = scratch_;
    d.code = code;
    d.graph.assign(n.owner()->name());
    d.nodes.resize(1);
    d.nodes[0].assign(n.name());
    d.node_count = 1;
    d.engine.assign(engine);
    d.detail.assign(detail);
    d.final = final;
    ctx_.record(d);
  }

  // Rule 1: lx attributes that disagree with the engine only earn a warning, and are written back from it.
  Status keep(sdk::Node& n, const Seen& s) {
    if (s.lx_engine.empty() && s.lx_kernel.empty()) {  // the usual case (every node, placed again)
      if (record_kept_)
        record(n, sdk::ReasonCode::kKept, std::string(s.engine), "the node had an engine before placement");
      return Status::ok();
    }
    // Copies: the attributes are rewritten while these are in use.
    const std::string engine(s.engine), lx_engine(s.lx_engine), lx_kernel(s.lx_kernel);
    const std::string kernel = n.attrs().get_string(sdk::attr::kOpKernelLibName);
    if (!lx_engine.empty() && !lx_kernel.empty() && (lx_engine != engine || lx_kernel != kernel)) {
      ctx_.log(sdk::LogLevel::kWarning, "node '" + n.name() + "': lxfusion attributes (" + lx_engine + ", " +
                                            lx_kernel + ") differ from its engine (" + engine + ", " +
                                            kernel + "); the op's engine wins");
    }
    n.attrs().set(sdk::attr::kLxfusionEngineName, AttrValue::String(engine));
    n.attrs().set(sdk::attr::kLxfusionOpKernelLibName, AttrValue::String(kernel));
    if (record_kept_) record(n, sdk::ReasonCode::kKept, engine, "the node had an engine before placement");
    return Status::ok();
  }

  Status assign(sdk::Node& n, const std::string& engine, const std::string& kernel, sdk::ReasonCode decision,
                const std::vector<Verdict>& verdicts, bool* changed) {
    // Both attributes at once: one allocation per node instead of a list grown twice. The keys are the
    // pass's interned ones: by name, each set looked the key up in the intern table and compared it as a
    // string with every attribute of the node.
    sdk::AttrMap& attrs = n.attrs();
    if (!attrs.get(seen_keys_.engine)) attrs.reserve(attrs.size() + 2);
    attrs.set(seen_keys_.engine, AttrValue::String(engine));
    attrs.set(seen_keys_.kernel, AttrValue::String(kernel));
    *changed = true;
    if (!keep_) return Status::ok();
    if (record_) {
      for (const Verdict& v : verdicts) record(n, v.code, v.engine, v.detail, /*final=*/false);
    }
    detail_.assign("kernel library ").append(kernel);
    record(n, decision, engine, detail_);
    return Status::ok();
  }

  // A node with subgraphs takes the one engine its subgraphs' operators share; otherwise the host drives it.
  // The engines seen are few (one or two): a list searched in place of a std::set, whose node and string copy
  // per inner node were most of placing a PartitionedCall.
  Status place_composite(sdk::Node& n, bool* changed) {
    std::vector<std::string_view> engines;
    size_t operators = 0;
    for (const sdk::Graph* g : n.subgraphs()) {
      for (const sdk::Node* inner : g->nodes()) {
        const std::string_view e = string_at(inner->attrs(), seen_keys_.engine);
        if (e == sdk::engine::kGeLocal && is_structural(inner->type())) continue;
        ++operators;
        if (std::find(engines.begin(), engines.end(), e) == engines.end()) engines.push_back(e);
      }
    }
    std::sort(engines.begin(), engines.end());  // the order std::set gave the message below
    if (engines.size() == 1 && !engines.front().empty()) {
      const std::string engine(engines.front());
      const sdk::EngineRef* ref = find(engine);
      const std::string kernel =
          ref && ref->table ? ref->table->kernel_lib() : std::string(sdk::engine::kGeLocalKernelLib);
      return assign(n, engine, kernel, sdk::ReasonCode::kComposite,
                    {{"subgraphs", sdk::ReasonCode::kOk, "every operator runs on " + engine}}, changed);
    }
    std::string why = operators == 0 ? std::string("the subgraphs hold no operator") : "the subgraphs use ";
    if (operators) {
      bool first = true;
      for (const std::string_view e : engines) {
        why += (first ? "" : ", ") + (e.empty() ? std::string("(unplaced)") : std::string(e));
        first = false;
      }
    }
    return assign(n, std::string(sdk::engine::kGeLocal), std::string(sdk::engine::kGeLocalKernelLib),
                  sdk::ReasonCode::kCompositeHost, {{"subgraphs", sdk::ReasonCode::kColourMismatch, why}},
                  changed);
  }

  const sdk::EngineRef* find(std::string_view name) const {
    for (const sdk::EngineRef& e : engines_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  // The engines listing the op type, cheapest first; the same for every node of a type, so kept per type,
  // keyed by the interned type string's address.
  const std::vector<Candidate>& candidates(const sdk::Node& n) {
    auto [it, fresh] = candidates_.try_emplace(&n.type());
    if (fresh) it->second = list_candidates(n);
    return it->second;
  }

  std::vector<Candidate> list_candidates(const sdk::Node& n) const {
    std::vector<Candidate> out;
    for (const sdk::EngineRef& e : engines_) {
      if (host_exec_ && e.name != sdk::engine::kHostCpu) continue;
      const sdk::OpSupportRow* row = e.table ? e.table->find(n.type()) : nullptr;
      if (row) out.push_back({&e, row->cost, excluded_.count(e.name) > 0});
    }
    // Ascending cost; then the engine priority (engines_ is already ordered by priority, then name).
    std::stable_sort(out.begin(), out.end(),
                     [](const Candidate& a, const Candidate& b) { return a.cost < b.cost; });
    return out;
  }

  Status place_by_candidates(sdk::Node& n, const Seen& s, bool* changed) {
    const std::string spec_engine(s.spec_engine), spec_kernel(s.spec_kernel);  // assign() rewrites the list
    const bool specified = !spec_engine.empty() && !spec_kernel.empty();
    std::vector<Candidate> chosen;
    const std::vector<Candidate>* list = &chosen;
    if (specified) {
      // The user's choice is the only candidate, and exclusions do not apply to it.
      const sdk::EngineRef* e = find(spec_engine);
      if (!e) {
        return Status::unsupported("EZ3003: " + where(n) + ": _specified_engine_name '" + spec_engine +
                                   "' is not a loaded engine");
      }
      if (!e->table || e->table->kernel_lib() != spec_kernel) {
        return Status::unsupported("EZ3003: " + where(n) + ": _specified_kernel_lib_name '" + spec_kernel +
                                   "' is not the kernel library of engine '" + spec_engine + "' (" +
                                   (e->table ? e->table->kernel_lib() : std::string("none")) + ")");
      }
      chosen.push_back({e, 0, false});
    } else {
      list = &candidates(n);
    }
    std::vector<Verdict>& verdicts = verdicts_;
    verdicts.clear();
    for (const Candidate& c : *list) {
      if (c.excluded) {
        verdicts.push_back({c.engine->name, sdk::ReasonCode::kEngineDisabled,
                            "excluded by ge.exec.exclude_engines or ge.engineType"});
        continue;
      }
      const sdk::SupportVerdict v = c.engine->engine->check_support(n);
      if (v.supported) {
        if (record_)
          verdicts.push_back({c.engine->name, sdk::ReasonCode::kOk, "cost " + std::to_string(c.cost)});
        return assign(n, c.engine->name, c.engine->table->kernel_lib(),
                      specified ? sdk::ReasonCode::kSpecified : sdk::ReasonCode::kCostOrder, verdicts,
                      changed);
      }
      verdicts.push_back({c.engine->name, v.reason, v.detail});
      if (v.reason == sdk::ReasonCode::kEngineNoDynamicShape && stop_) {
        // GE stops the search here rather than falling back (reference 4.1, step 4).
        return Status::unsupported("EZ3002: " + where(n) + " is not supported by " + c.engine->name + ": " +
                                   std::string(sdk::to_string(v.reason)) + " (" + v.detail + ")");
      }
    }
    std::string why;
    for (const Verdict& v : verdicts)
      why += (why.empty() ? "" : "; ") + v.engine + ": " + std::string(sdk::to_string(v.code)) + " (" +
             v.detail + ")";
    if (why.empty()) why = "no loaded engine lists op type " + n.type();
    return Status::unsupported("EZ3003: no engine can run " + where(n) + ": " + why);
  }

  sdk::PassContext& ctx_;
  std::vector<sdk::EngineRef> engines_;
  std::set<std::string> excluded_;
  bool host_exec_ = false;
  bool stop_;
  bool keep_;
  bool record_;
  bool record_kept_;
  sdk::Decision scratch_;
  std::string detail_;
  const SeenKeys seen_keys_;
  std::vector<Verdict> verdicts_;  // place_by_candidates' list, kept to reuse its storage
  std::unordered_map<const std::string*, std::vector<Candidate>> candidates_;
};

}  // namespace

bool is_structural(std::string_view type) {
  return sdk::is_data_like(type) || type == sdk::op::kConst || type == sdk::op::kNetOutput ||
         type == sdk::op::kNoOp || type == sdk::op::kPlaceHolder || type == sdk::op::kEnd ||
         type == sdk::op::kVariable;
}

EnginePlace::EnginePlace(const sdk::PluginContext& ctx)
    : stop_on_no_dynamic_shape_(ctx.options().get_bool("stop_on_no_dynamic_shape", true)),
      record_verdicts_(ctx.options().get_bool("record_verdicts", true)),
      record_kept_(ctx.options().get_bool("record_kept", true)) {}

Status EnginePlace::run(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  Placer placer(ctx, stop_on_no_dynamic_shape_, record_verdicts_, record_kept_);
  GS_RETURN_IF_ERROR(placer.init());
  // Deepest subgraphs first, so that a node with subgraphs sees its subgraphs placed.
  std::vector<std::pair<int, sdk::Graph*>> graphs;
  for (sdk::Graph* g : root.subgraphs()) {
    int depth = 0;
    for (const sdk::Graph* up = g; !up->is_root(); up = up->parent_graph()) ++depth;
    if (depth > kMaxSubgraphDepth) {
      return Status::resource_exhausted("E19999: subgraph '" + g->name() + "' is nested " +
                                        std::to_string(depth) + " levels deep; placement handles at most " +
                                        std::to_string(kMaxSubgraphDepth));
    }
    graphs.emplace_back(depth, g);
  }
  std::stable_sort(graphs.begin(), graphs.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  graphs.emplace_back(0, &root);
  for (auto& [depth, g] : graphs) {
    for (sdk::Node* n : g->nodes()) GS_RETURN_IF_ERROR(placer.place(*n, changed));
  }
  return Status::ok();
}

}  // namespace graphsplit::plugins::placement
