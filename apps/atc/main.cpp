// atc: the graphsplit model converter, with GE's option style (--name=value, modes selected by --mode).
#include <malloc.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>
#include <unordered_map>

#include "common/atomic_file.h"
#include "common/install_paths.h"
#include "common/log.h"
#include "common/process_memory.h"
#include "config/config.h"
#ifdef GRAPHSPLIT_HUGE_HEAP
#include "huge_heap.h"
#endif
#include "driver/compile.h"
#include "graphsplit/sdk/gears.h"
#include "graphsplit/sdk/ir/graph.h"
#include "leak_at_exit.h"
#include "model/om_io.h"
#include "options.h"
#include "pipeline/pipeline.h"
#include "progress.h"
#include "report/onnx_export.h"
#include "report/partition_report.h"
#include "report/placement_report.h"

namespace graphsplit::atc {
namespace {

using sdk::Status;
namespace fs = std::filesystem;

// The progress line is erased before an error is printed (stderr is the terminal it is drawn on).
Progress* active_progress = nullptr;

int fail(const std::string& message) {
  if (active_progress) active_progress->finish();
  std::string line = message;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::fprintf(stderr, "atc: error: %s\n", line.c_str());
  return 1;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "x float32[s0,64,floor((s1+1)/2)]": a symbolic dimension prints as its expression alone.
std::string io_line(const sdk::Node* n, size_t out) {
  const sdk::TensorDesc& d = n->output_desc(out);
  if (d.kind != sdk::ValueKind::kTensor || d.shape.is_unknown_rank() || d.shape.dim_names().empty())
    return n->output_name(out) + " " + d.to_string();
  std::string dims;
  for (size_t i = 0; i < d.shape.rank(); ++i) {
    const std::string& name = i < d.shape.dim_names().size() ? d.shape.dim_names()[i] : std::string();
    const int64_t v = d.shape.dims()[i];
    dims += (i ? "," : "") + (v < 0 && !name.empty() ? name : std::to_string(v));
  }
  return n->output_name(out) + " " + std::string(sdk::to_string(d.dtype)) + "[" + dims + "]";
}

// A summary line of at most kShown entries: a model with thousands of outputs (every unread node of a
// generated graph is one) printed them all on one line, tens of kilobytes.
class Listing {
 public:
  static constexpr size_t kShown = 8;
  explicit Listing(const char* noun) : noun_(noun) {}
  template <class Describe>
  void add(Describe describe) {
    if (count_++ < kShown) text_ << (count_ > 1 ? ", " : "") << describe();
  }
  std::string str() const {
    if (count_ <= kShown) return text_.str();
    return text_.str() + ", ... (" + std::to_string(count_) + " " + noun_ + ")";
  }

 private:
  const char* noun_;
  size_t count_ = 0;
  std::ostringstream text_;
};

void print_summary(const AtcOptions& o, const sdk::Graph& root, const std::string& om_path, size_t om_bytes) {
  std::map<std::string, size_t> ops;
  Listing in("inputs"), out("outputs");
  for (const sdk::Node* n : root.nodes()) {
    if (n->type() == sdk::op::kData) {
      in.add([&] { return io_line(n, 0); });
    } else if (n->type() == sdk::op::kNetOutput) {
      for (size_t i = 0; i < n->num_inputs(); ++i) {
        const sdk::OutPort p = n->input(i);
        out.add([&] { return p.node ? io_line(p.node, p.index) : std::string("?"); });
      }
    }
  }
  // Operator types are interned: counted by address, then by name.
  std::unordered_map<const std::string*, size_t> by_type;
  auto count = [&](const sdk::Graph& g) {
    for (const sdk::Node* n : g.nodes()) ++by_type[&n->type()];
  };
  count(root);
  for (const sdk::Graph* g : root.subgraphs()) count(*g);
  for (const auto& [type, k] : by_type) ops[*type] += k;
  std::vector<std::pair<std::string, size_t>> top(ops.begin(), ops.end());
  std::stable_sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::ostringstream ops_line;
  for (size_t i = 0; i < top.size() && i < 8; ++i)
    ops_line << (i ? ", " : "") << top[i].first << " " << top[i].second;
  if (top.size() > 8) ops_line << ", ... (" << top.size() << " op types)";

  std::printf("model:     %s\n", o.model.c_str());
  std::printf("graph:     '%s': %zu nodes in the root graph, %zu subgraphs, %zu nodes in all\n",
              root.name().c_str(), root.num_nodes(), root.subgraphs().size(), root.total_nodes());
  std::printf("inputs:    %s\n", in.str().c_str());
  std::printf("outputs:   %s\n", out.str().c_str());
  std::printf("ops:       %s\n", ops_line.str().c_str());
  const auto placement = placement_summary(root);
  if (!(placement.size() == 1 && placement.begin()->first.empty())) {
    std::vector<std::pair<std::string, size_t>> by_count(placement.begin(), placement.end());
    std::stable_sort(by_count.begin(), by_count.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::ostringstream p;
    for (size_t i = 0; i < by_count.size(); ++i) {
      p << (i ? ", " : "") << (by_count[i].first.empty() ? "(unplaced)" : by_count[i].first) << " "
        << by_count[i].second;
    }
    std::printf("placement: %s\n", p.str().c_str());
  }
  std::printf("wrote:     %s (%zu bytes)\n", om_path.c_str(), om_bytes);
}

// The driver's view of the command line: everything but what atc prints or writes.
CompileRequest request_of(const AtcOptions& o, const std::string& model) {
  CompileRequest r;
  r.model = model;
  r.framework = o.framework;
  r.pipeline = o.pipeline;
  r.plugin_paths = o.plugin_paths;
  r.ge_options = o.ge_options;
  r.input_shape = o.input_shape;
  r.dynamic_batch_size = o.dynamic_batch_size;
  r.dynamic_image_size = o.dynamic_image_size;
  r.dynamic_dims = o.dynamic_dims;
  r.input_format = o.input_format;
  r.max_nodes = o.max_nodes;
  r.max_nesting_depth = o.max_nesting_depth;
  r.verify_each = o.verify_each;
  r.timing = o.timing;
  r.dump_graph = o.dump_graph;
  r.entry_timeout = o.entry_timeout;
  // Only these read the decision log; without them it is 100 MB of a million-node compile's peak.
  r.keep_decisions = !o.explain.empty() || !o.partition_report.empty() || !o.export_onnx.empty() ||
                     !o.dump_placement.empty();
  // Nothing is written before the pipeline ends, so stopping here leaves no output (a stale one is removed).
  r.on_time_limit = [output = o.output](const std::string& message) {
    if (!output.empty()) {
      std::error_code ec;
      fs::remove(ends_with(output, ".om") ? output : output + ".om", ec);
    }
    std::fprintf(stderr, "atc: error: %s\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  };
  return r;
}

int list_plugins_command(const AtcOptions& o) {
  const CompileRequest r = request_of(o, o.model);
  std::vector<std::string> paths = plugin_search_paths(r);
  PipelineConfig config;
  std::vector<Diagnostic> diags;
  if (parse_pipeline_config(pipeline_path(r), &config, &diags).is_ok()) {
    paths.insert(paths.end(), config.search_paths.begin(), config.search_paths.end());
  }
  for (const std::string& p : builtin_plugin_paths()) paths.push_back(p);
  bool all_ok = true;
  std::fputs(list_plugins(paths, &all_ok).c_str(), stdout);
  return 0;
}

int validate_command(const AtcOptions& o) {
  std::unique_ptr<Pipeline> pipeline;
  std::vector<Diagnostic> diags;
  Status s = build_pipeline(request_of(o, o.model), o.validate_pipeline, &pipeline, &diags);
  if (s.is_ok()) {
    std::printf("%s: ok\n", o.validate_pipeline.c_str());
    return 0;
  }
  if (diags.empty()) return fail(s.message());
  for (const Diagnostic& d : diags) std::fprintf(stderr, "%s\n", d.str().c_str());
  return 1;
}

int print_pipeline_command(const AtcOptions& o) {
  std::unique_ptr<Pipeline> pipeline;
  std::vector<Diagnostic> diags;
  const CompileRequest r = request_of(o, o.model);
  if (Status s = build_pipeline(r, pipeline_path(r), &pipeline, &diags); !s) return fail(s.message());
  std::fputs(pipeline->canonical_toml().c_str(), stdout);
  return 0;
}

// A failed run must not leave an output behind, not even one from an earlier run that could be mistaken for
// this run's result.
int fail_and_remove(const std::string& output, const std::string& message) {
  std::error_code ec;
  fs::remove(output, ec);
  return fail(message);
}

void remove_quietly(const std::string& file) {
  std::error_code ec;
  fs::remove(file, ec);
}

// All or nothing: a file that cannot be written removes the ones written before it.
Status write_side_files(const std::vector<std::pair<std::string, std::string>>& files) {
  for (size_t i = 0; i < files.size(); ++i) {
    if (Status s = write_file_atomically(files[i].first, files[i].second); !s) {
      for (size_t j = 0; j <= i; ++j) remove_quietly(files[j].first);
      return s;
    }
  }
  return Status::ok();
}

int convert(const AtcOptions& o) {
  if (o.model.empty()) return fail("--model is required with --mode=0 (e.g. --model=net.onnx --output=net)");
  if (o.output.empty()) return fail("--output is required with --mode=0 (writes OUTPUT.om)");
  const std::string path = ends_with(o.output, ".om") ? o.output : o.output + ".om";
  Compilation c;
  Progress progress(o.log);
  CompileRequest request = request_of(o, o.model);
  if (progress.enabled())
    request.on_step = [&](const std::string& what, size_t i, size_t n) { progress.step(what, i, n); };
  active_progress = &progress;
  struct Forget {
    ~Forget() { active_progress = nullptr; }
  } forget;
  Status compiled = compile_model(request, &c);
  const auto written_from = std::chrono::steady_clock::now();
  progress.step("writing " + path);
  if (c.pipeline && c.pipeline->timing_enabled() && c.root) {
    progress.finish();
    std::fputs(c.pipeline->timing_table().c_str(), stdout);
  }
  if (!compiled) return fail_and_remove(path, compiled.message());
  std::string explanation;
  if (!o.explain.empty()) {
    if (Status s = c.explain(o.explain, &explanation); !s) return fail_and_remove(path, s.message());
  }
  // Every side file is made before any is written, so a failure leaves none of them behind.
  std::vector<std::pair<std::string, std::string>> side_files;
  if (!o.partition_report.empty()) {
    std::string text;
    const bool html = ends_with(o.partition_report, ".html") || ends_with(o.partition_report, ".htm");
    if (Status s = html ? c.partition_report_html(&text) : c.partition_report(&text); !s)
      return fail_and_remove(path, s.message());
    side_files.emplace_back(o.partition_report, std::move(text));
  }
  if (!o.export_onnx.empty()) {
    std::string bytes;
    if (Status s = export_onnx(*c.root, c.pipeline->decisions(), &bytes); !s)
      return fail_and_remove(path, s.message());
    side_files.emplace_back(o.export_onnx, std::move(bytes));
  }
  if (!o.dump_placement.empty()) {
    std::string json;
    if (Status s = c.placement_report(&json); !s) return fail_and_remove(path, s.message());
    if (Status s = write_file_atomically(o.dump_placement, json); !s)
      return fail_and_remove(path, s.message());
  }
  if (Status s = write_side_files(side_files); !s) return fail_and_remove(path, s.message());
  size_t om_size = 0;
  if (Status s = c.write_om(path, &om_size); !s) {
    for (const auto& [file, text] : side_files) remove_quietly(file);
    return fail_and_remove(path, s.message());
  }
  progress.finish();
  if (o.timing) {
    std::printf(
        "atc: plugins %.1f ms, import %.1f ms (rss %.0f MB), pipeline %.1f ms, .om serialised and written "
        "%.1f "
        "ms; peak %.0f MB\n",
        c.plugins_ms, c.import_ms, static_cast<double>(c.import_resident_kb) / 1024.0, c.pipeline_ms,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - written_from).count(),
        static_cast<double>(process_memory().peak_kb) / 1024.0);
  }
  print_summary(o, *c.root, path, om_size);
  for (const auto& [file, text] : side_files)
    std::printf("wrote:     %s (%zu bytes)\n", file.c_str(), text.size());
  if (!explanation.empty()) std::fputs(explanation.c_str(), stdout);
  apps::leak_at_exit(std::move(c));
  return 0;
}

// atc --mode=1 --om=X.om --onnx=FILE: the partitioned model of an existing .om as ONNX.
int om_to_onnx(const AtcOptions& o) {
  std::unique_ptr<sdk::Graph> root;
  std::string bytes;
  if (Status s = read_om_file(o.om, &root); !s) return fail_and_remove(o.onnx, s.message());
  if (Status s = export_onnx(*root, {}, &bytes); !s)
    return fail_and_remove(o.onnx, o.om + ": " + s.message());
  if (Status s = write_file_atomically(o.onnx, bytes); !s) return fail_and_remove(o.onnx, s.message());
  std::printf("wrote:     %s (%zu bytes)\n", o.onnx.c_str(), bytes.size());
  return 0;
}

int to_json(const AtcOptions& o) {
  if (o.om.empty()) return fail("--om is required with --mode=1 (the model to convert to JSON or ONNX)");
  if (!o.onnx.empty()) {
    if (!o.json.empty()) return fail("--json and --onnx cannot be given together with --mode=1");
    if (ends_with(o.om, ".onnx") || o.framework)
      return fail(
          "--onnx with --mode=1 reads a compiled .om (--om=X.om); compile an ONNX model with "
          "--export_onnx instead");
    return om_to_onnx(o);
  }
  if (o.json.empty()) return fail("--json is required with --mode=1 (the JSON file to write)");
  std::string json;
  if (ends_with(o.om, ".onnx") || o.framework) {
    std::unique_ptr<sdk::Graph> root;
    if (Status s = load_model(request_of(o, o.om), &root); !s) return fail_and_remove(o.json, s.message());
    if (Status s = graph_to_json(*root, &json); !s) return fail_and_remove(o.json, s.message());
  } else {
    std::string bytes;
    if (Status s = read_file(o.om, &bytes, uint64_t{1} << 31); !s)
      return fail_and_remove(o.json, s.message());
    if (Status s = om_to_json(bytes, o.om, &json); !s) return fail_and_remove(o.json, s.message());
  }
  if (Status s = write_file_atomically(o.json, json); !s) return fail_and_remove(o.json, s.message());
  std::printf("wrote:     %s (%zu bytes)\n", o.json.c_str(), json.size());
  return 0;
}

}  // namespace
}  // namespace graphsplit::atc

int main(int argc, char** argv) {
  using namespace graphsplit::atc;
  // A fixed mmap threshold: glibc raises it to the size of each large block freed, so that the pipeline's
  // per-node arrays (megabytes each on a large graph) came from the heap and, freed, left holes that later
  // allocations could not fill: 170 MB of a million-node chain's peak. Above this size, memory is mapped and
  // given back when freed. Only glibc reads it (-DGRAPHSPLIT_TCMALLOC=OFF); tcmalloc ignores it.
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
#ifdef GRAPHSPLIT_HUGE_HEAP
  const graphsplit::apps::HugeHeapChoice heap = graphsplit::apps::use_huge_pages_for_heap();
#endif
  CLI::App app{"atc: convert a model into a graphsplit .om model (GE-style options)", "atc"};
  AtcOptions options;
  register_core_options(app, options);
  register_pipeline_options(app, options);
  register_gear_options(app, options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }
  if (options.version) {
    std::printf(
        "atc (graphsplit) %s; ONNX IR up to %d, ai.onnx opsets up to %d (libonnx's schemas up to %d)\n",
        GRAPHSPLIT_VERSION, graphsplit::kMaxOnnxIrVersion, graphsplit::kMaxOnnxOpset,
        graphsplit::max_supported_onnx_opset());
    return 0;
  }
  if (auto s = graphsplit::init_logging(options.log); !s) return fail(s.message());
#ifdef GRAPHSPLIT_HUGE_HEAP
  graphsplit::log_debug(heap.log_line());
#endif
  try {
    if (options.list_plugins) return list_plugins_command(options);
    if (!options.validate_pipeline.empty()) return validate_command(options);
    if (options.print_pipeline) return print_pipeline_command(options);
    switch (options.mode) {
      case 0:
        return convert(options);
      case 1:
        return to_json(options);
      default:
        return fail("--mode=" + std::to_string(options.mode) +
                    " is not supported (0: model to .om, 1: to JSON)");
    }
  } catch (const std::exception& e) {
    return fail(std::string("internal error: ") + e.what());
  }
}
