// atc --partition_report=FILE.html: one self-contained page with the summary, a picture drawn by Graphviz's
// `dot` (nodes coloured by engine, one cluster per subgraph, dynamic ones marked) and the decisions,
// filterable.
#include "report/partition_html.h"

#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/atomic_file.h"
#include "driver/compile.h"
#include "report/partition_report.h"
#include "report/partition_report_impl.h"

extern char** environ;

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using sdk::Graph;
using sdk::Node;
using sdk::Status;

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out + "\"";
}

// Colours per engine, in the order engines first appear sorted by name: the same engine, the same colour.
const char* const kPalette[] = {"#8dd3c7", "#fdb462", "#bebada", "#fb8072", "#80b1d3",
                                "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5"};

class DotWriter {
 public:
  DotWriter(const Graph& root, size_t node_cap) : root_(root) {
    std::set<std::string> engines;
    collect_engines(root, &engines);
    size_t k = 0;
    for (const std::string& e : engines) colour_[e] = kPalette[k++ % std::size(kPalette)];
    collapsed_ = root.total_nodes() > node_cap;
  }

  const std::map<std::string, std::string>& colours() const { return colour_; }
  bool collapsed() const { return collapsed_; }

  std::string dot() {
    out_ << "strict digraph partition {\n  compound=true; rankdir=TB; newrank=true;\n"
         << "  node [fontsize=9, fontname=\"Helvetica\", style=filled, fillcolor=white, shape=box];\n"
         << "  edge [color=\"#888888\", arrowsize=0.5];\n";
    emit_members(root_, "  ");
    for (const auto& e : edges_) out_ << "  " << e << ";\n";
    out_ << "}\n";
    return out_.str();
  }

 private:
  static void collect_engines(const Graph& g, std::set<std::string>* out) {
    for (const Node* n : g.nodes()) {
      const std::string e = n->attrs().get_string(sdk::attr::kOpEngineName);
      if (!e.empty()) out->insert(e);
      for (const Graph* sub : n->subgraphs()) collect_engines(*sub, out);
    }
  }

  std::string id(const Node* n) {
    auto [it, fresh] = ids_.emplace(n, "n" + std::to_string(ids_.size()));
    return it->second;
  }

  std::string fill(const Node* n) const {
    auto it = colour_.find(n->attrs().get_string(sdk::attr::kOpEngineName));
    return it == colour_.end() ? "white" : it->second;
  }

  // A graph's own nodes, then one cluster per subgraph its nodes own (nested, as the model nests them).
  void emit_members(const Graph& g, const std::string& indent) {
    if (collapsed_ && !g.is_root()) {
      emit_summary(g, indent);
    } else {
      for (const Node* n : g.nodes()) emit_node(n, indent);
    }
    for (const Node* n : g.nodes())
      for (const Graph* sub : n->subgraphs()) emit_cluster(*sub, indent);
  }

  // A collapsed root shows only its inputs, outputs and the nodes that own subgraphs.
  bool visible(const Node* n) const {
    const std::string& t = n->type();
    return !collapsed_ || (n->owner()->is_root() &&
                           (t == sdk::op::kData || t == sdk::op::kNetOutput || !n->subgraphs().empty()));
  }

  void emit_node(const Node* n, const std::string& indent) {
    const std::string& t = n->type();
    if (!visible(n)) return;
    const bool io = t == sdk::op::kData || t == sdk::op::kNetOutput;
    const std::string shape = io                        ? "ellipse"
                              : t == sdk::op::kConst    ? "note"
                              : !n->subgraphs().empty() ? "component"
                                                        : "box";
    out_ << indent << id(n) << " [shape=" << shape << ", fillcolor=" << dot_quote(fill(n))
         << ", label=" << dot_quote(n->name() + "\n" + t)
         << ", tooltip=" << dot_quote(n->name() + " (" + t + ")" + engine_suffix(n)) << "];\n";
    for (size_t i = 0; i < n->num_inputs(); ++i) {
      const sdk::OutPort p = n->input(i);
      if (p.valid() && p.node->owner() == n->owner() && visible(p.node))
        edges_.push_back(id(p.node) + " -> " + id(n));
    }
    for (const Graph* sub : n->subgraphs()) {
      if (collapsed_) break;  // emit_summary links the owner to its subgraph's node
      for (const Node* m : sub->nodes()) {
        if (m->type() != sdk::op::kData) continue;
        edges_.push_back(id(n) + " -> " + id(m) + " [style=dotted, lhead=" + cluster_name(*sub) + "]");
        break;
      }
    }
  }

  static std::string engine_suffix(const Node* n) {
    const std::string e = n->attrs().get_string(sdk::attr::kOpEngineName);
    return e.empty() ? std::string() : " on " + e;
  }

  std::string cluster_name(const Graph& g) {
    auto [it, fresh] = clusters_.emplace(&g, "cluster_" + std::to_string(clusters_.size()));
    return it->second;
  }

  void emit_cluster(const Graph& sub, const std::string& indent) {
    const bool dynamic = sub.attrs().get_bool(sdk::attr::kIsUnknownShape, false);
    const std::string kind = graph_kind(sub);
    out_ << indent << "subgraph " << cluster_name(sub) << " {\n"
         << indent
         << "  label=" << dot_quote(sub.name() + " [" + kind + (dynamic ? ", dynamic]" : ", static]"))
         << "; fontsize=10; id=" << dot_quote("graph:" + sub.name())
         << "; class=" << dot_quote(std::string("partition ") + (dynamic ? "dynamic" : "static"))
         << "; style="
         << (dynamic ? "\"dashed,rounded\"; color=\"#d62728\"; penwidth=2" : "rounded; color=\"#1f77b4\"")
         << ";\n";
    emit_members(sub, indent + "  ");
    out_ << indent << "}\n";
  }

  // Collapsed: one node per graph with its size and operator mix, coloured by its main engine.
  void emit_summary(const Graph& g, const std::string& indent) {
    std::map<std::string, size_t> by_engine, by_type;
    for (const Node* n : g.nodes()) {
      const std::string& t = n->type();
      if (t == sdk::op::kData || t == sdk::op::kConst || t == sdk::op::kNetOutput) continue;
      ++by_type[t];
      const std::string e = n->attrs().get_string(sdk::attr::kOpEngineName);
      if (!e.empty()) ++by_engine[e];
    }
    std::vector<std::pair<std::string, size_t>> types(by_type.begin(), by_type.end());
    std::stable_sort(types.begin(), types.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string label = std::to_string(g.num_nodes()) + " nodes";
    for (size_t i = 0; i < types.size() && i < 4; ++i)
      label += "\n" + types[i].first + " " + std::to_string(types[i].second);
    std::string main_engine;
    size_t best = 0;
    for (const auto& [e, c] : by_engine)
      if (c > best) best = c, main_engine = e;
    auto it = colour_.find(main_engine);
    summary_ids_[&g] = "s" + std::to_string(summary_ids_.size());
    out_ << indent << summary_ids_[&g]
         << " [shape=box3d, fillcolor=" << dot_quote(it == colour_.end() ? "white" : it->second)
         << ", label=" << dot_quote(label) << "];\n";
    if (const Node* owner = g.parent_node(); owner && ids_.count(owner))
      edges_.push_back(ids_[owner] + " -> " + summary_ids_[&g] + " [style=dotted]");
  }

  const Graph& root_;
  std::map<std::string, std::string> colour_;
  std::map<const Node*, std::string> ids_;
  std::map<const Graph*, std::string> clusters_;
  std::map<const Graph*, std::string> summary_ids_;
  std::vector<std::string> edges_;
  std::ostringstream out_;
  bool collapsed_ = false;
};

// Runs Graphviz's `dot -Tsvg` on the text through two files in a private temporary folder.
Status run_dot(const std::string& dot, std::string* svg) {
  std::error_code ec;
  char tmpl[] = "/tmp/graphsplit-dot-XXXXXX";
  const char* dir = mkdtemp(tmpl);
  if (!dir) return Status::internal("HTML report: cannot create a temporary folder for Graphviz");
  const std::string in = std::string(dir) + "/partition.dot", out = std::string(dir) + "/partition.svg";
  auto cleanup = [&] { fs::remove_all(dir, ec); };
  {
    std::ofstream f(in, std::ios::binary);
    f << dot;
    if (!f) return cleanup(), Status::internal("HTML report: cannot write " + in);
  }
  std::string arg_out = "-o" + out;
  const char* argv[] = {"dot", "-Tsvg", arg_out.c_str(), in.c_str(), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "dot", &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return cleanup(),
           Status::unsupported(
               "HTML report: Graphviz's dot was not found on PATH (Debian: apt-get install graphviz)");
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return cleanup(), Status::internal("HTML report: Graphviz's dot failed on the partition picture");
  Status s = read_file(out, svg, uint64_t{1} << 30);
  cleanup();
  if (!s) return s;
  // The page embeds the <svg> element itself, without the XML prologue.
  const size_t start = svg->find("<svg");
  if (start == std::string::npos) return Status::internal("HTML report: Graphviz's output holds no <svg>");
  svg->erase(0, start);
  return Status::ok();
}

std::string json_for_script(std::string json) {
  // "</" would end the <script> element early.
  for (size_t p = 0; (p = json.find("</", p)) != std::string::npos; p += 3) json.replace(p, 2, "<\\/");
  return json;
}

void summary_section(const report::PartitionReport& r, const std::map<std::string, size_t>& engine_nodes,
                     const std::map<std::string, std::string>& colours, std::ostringstream& h) {
  const report::Summary& s = r.summary();
  h << "<section id=\"summary\"><h2>Summary</h2><table class=\"summary\">\n";
  auto row = [&](const std::string& key, const std::string& label, int64_t v) {
    h << "<tr><th>" << label << "</th><td data-key=\"" << key << "\">" << v << "</td></tr>\n";
  };
  row("graphs", "graphs", s.graphs());
  row("static_graphs", "static subgraphs", s.static_graphs());
  row("dynamic_graphs", "dynamic subgraphs", s.dynamic_graphs());
  row("boundary_edges", "boundary edges", s.boundary_edges());
  row("engine_subgraphs", "engine subgraphs", s.engine_subgraphs());
  for (const auto& [kind, count] : std::map<std::string, int64_t>(s.by_kind().begin(), s.by_kind().end()))
    row("kind:" + kind, "graphs of kind " + html_escape(kind), count);
  h << "</table>\n<h3>Nodes per engine</h3><table class=\"engines\">\n";
  for (const auto& [engine, count] : engine_nodes) {
    auto c = colours.find(engine);
    h << "<tr><th><span class=\"swatch\" style=\"background:" << (c == colours.end() ? "white" : c->second)
      << "\"></span>" << html_escape(engine.empty() ? "(no engine)" : engine) << "</th><td data-engine=\""
      << html_escape(engine) << "\">" << count << "</td></tr>\n";
  }
  h << "</table></section>\n";
}

void graphs_section(const report::PartitionReport& r, std::ostringstream& h) {
  h << "<section id=\"graphs\"><h2>Graphs</h2><table class=\"list\"><thead><tr><th>name</th><th>kind</th>"
       "<th>shape</th><th>engine</th><th>stage</th><th>nodes</th></tr></thead><tbody>\n";
  for (const report::GraphEntry& g : r.graphs()) {
    h << "<tr class=\"graph-row\"><td>" << html_escape(g.name()) << "</td><td>" << html_escape(g.kind())
      << "</td><td>" << (g.unknown_shape() ? "dynamic" : "static") << "</td><td>"
      << html_escape(g.has_engine() ? g.engine() : "") << "</td><td>"
      << (g.has_stage() ? std::to_string(g.stage()) : "") << "</td><td>" << g.node_count() << "</td></tr>\n";
  }
  h << "</tbody></table></section>\n";
}

void decisions_section(const report::PartitionReport& r, std::ostringstream& h) {
  std::set<std::string> codes;
  for (const report::Decision& d : r.decisions()) codes.insert(d.code());
  h << "<section id=\"decisions\"><h2>Decisions (" << r.decisions_size() << ")</h2>\n"
    << "<p><input id=\"filter\" type=\"search\" placeholder=\"filter: node, graph or text\"> "
    << "<select id=\"code\"><option value=\"\">every reason code</option>";
  for (const std::string& c : codes) h << "<option>" << html_escape(c) << "</option>";
  h << "</select> <span id=\"shown\"></span></p>\n<table class=\"list\" id=\"decision-table\"><thead><tr>"
       "<th>code</th><th>stage</th><th>graph</th><th>nodes</th><th>detail</th></tr></thead><tbody>\n";
  for (const report::Decision& d : r.decisions()) {
    std::string nodes;
    for (int i = 0; i < d.nodes_size(); ++i) nodes += (i ? ", " : "") + d.nodes(i);
    if (d.node_count() > d.nodes_size()) nodes += ", ... (" + std::to_string(d.node_count()) + " nodes)";
    h << "<tr class=\"decision\" data-code=\"" << html_escape(d.code()) << "\"><td>" << html_escape(d.code())
      << "</td><td>" << html_escape(d.stage()) << "</td><td>" << html_escape(d.graph()) << "</td><td>"
      << html_escape(nodes) << "</td><td>" << html_escape(d.detail()) << "</td></tr>\n";
  }
  h << "</tbody></table></section>\n";
}

constexpr const char* kStyle = R"(<style>
body{font-family:Helvetica,Arial,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:2px 8px;text-align:left;font-size:13px}
table.summary td,table.engines td{text-align:right}.swatch{display:inline-block;width:.9em;height:.9em;margin-right:.4em;border:1px solid #999;vertical-align:middle}
#picture{overflow:auto;max-height:80vh;border:1px solid #ddd}#picture svg{max-width:none}
.legend span{margin-right:1em}tr.hidden{display:none}
</style>
)";

constexpr const char* kScript = R"(<script>
(function(){
  var filter=document.getElementById('filter'),code=document.getElementById('code'),shown=document.getElementById('shown');
  var rows=Array.prototype.slice.call(document.querySelectorAll('tr.decision'));
  function apply(){
    var text=filter.value.toLowerCase(),c=code.value,n=0;
    rows.forEach(function(r){
      var ok=(!c||r.getAttribute('data-code')===c)&&(!text||r.textContent.toLowerCase().indexOf(text)>=0);
      r.classList.toggle('hidden',!ok);if(ok)n++;
    });
    shown.textContent=n+' of '+rows.length+' shown';
  }
  filter.addEventListener('input',apply);code.addEventListener('change',apply);
  // A link may preselect the filter: report.html#code=CYCLE or #filter=conv1.
  var hash=decodeURIComponent(location.hash.slice(1)),eq=hash.indexOf('=');
  if(eq>0){var k=hash.slice(0,eq),v=hash.slice(eq+1);if(k==='code')code.value=v;if(k==='filter')filter.value=v;}
  apply();
})();
</script>
)";

}  // namespace

Status partition_report_html(const Graph& root, const std::string& model,
                             const std::vector<sdk::Decision>& decisions, std::string* html) {
  report::PartitionReport r;
  build_partition_report(root, model, decisions, &r);
  std::string json;
  GS_RETURN_IF_ERROR(partition_report_to_json(r, &json));
  DotWriter writer(root, kHtmlReportNodeCap);
  std::string svg;
  const bool drawn = root.subgraphs().size() <= kHtmlReportClusterCap;
  if (drawn) {
    GS_RETURN_IF_ERROR(run_dot(writer.dot(), &svg));
  } else {
    svg = "<p class=\"undrawn\">Not drawn: " + std::to_string(root.subgraphs().size()) +
          " subgraphs exceed " + std::to_string(kHtmlReportClusterCap) +
          ", past which Graphviz's layout takes minutes.</p>";
  }
  std::map<std::string, size_t> engine_nodes;
  for (const auto& [engine, colour] : writer.colours()) engine_nodes[engine] = 0;
  std::vector<const Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  for (const Graph* g : graphs)
    for (const Node* n : g->nodes())
      if (n->type() != sdk::op::kData && n->type() != sdk::op::kNetOutput && n->type() != sdk::op::kConst &&
          n->subgraphs().empty())
        ++engine_nodes[n->attrs().get_string(sdk::attr::kOpEngineName)];
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>graphsplit partition: "
    << html_escape(model) << "</title>\n"
    << kStyle << "</head><body>\n<h1>Partition of " << html_escape(model) << "</h1>\n";
  summary_section(r, engine_nodes, writer.colours(), h);
  h << "<section id=\"picture-section\"><h2>Picture</h2><p class=\"legend\">One box per subgraph: "
       "<span style=\"color:#1f77b4\">solid blue = static</span><span style=\"color:#d62728\">dashed red = "
       "dynamic</span>; nodes coloured by engine."
    << (writer.collapsed()
            ? " The model has more than " + std::to_string(kHtmlReportNodeCap) +
                  " nodes: each subgraph is drawn as one node with its size and main operators."
            : std::string())
    << "</p><div id=\"picture\">" << svg << "</div></section>\n";
  graphs_section(r, h);
  decisions_section(r, h);
  h << "<script type=\"application/json\" id=\"report-data\">" << json_for_script(json) << "</script>\n"
    << kScript << "</body></html>\n";
  *html = h.str();
  return Status::ok();
}

}  // namespace graphsplit
