#include "scope_and_variable.h"

#include <algorithm>
#include <map>
#include <set>

#include "graphsplit/sdk/partition_frames.h"
#include "graphsplit/sdk/strings.h"

namespace graphsplit::plugins::multibatch {
namespace {

using sdk::AttrValue;
using sdk::Graph;
using sdk::Node;
using sdk::split;
using sdk::Status;

bool parse_int(std::string t, int64_t* v) {
  t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
  if (t.empty()) return false;
  size_t used = 0;
  try {
    *v = std::stoll(t, &used);
  } catch (...) {
    return false;
  }
  return used == t.size();
}

// `_subgraph_multi_dims_input_dims`: grades separated by ';' (values of a grade by ','), or, for one unknown
// dimension, single-value grades separated by ','.
Status parse_grades(const Node& n, const std::string& text, std::vector<std::vector<int64_t>>* grades) {
  const bool multi = text.find(';') != std::string::npos;
  for (const std::string& grade : split(text, multi ? ';' : ',')) {
    std::vector<int64_t> values;
    for (const std::string& tok : multi ? split(grade, ',') : std::vector<std::string>{grade}) {
      int64_t v = 0;
      if (!parse_int(tok, &v) || v < 0) {
        return Status::invalid_argument("scope subgraph: node '" + n.name() +
                                        "': " + std::string(sdk::attr::kSubgraphMultiDimsInputDims) + " '" +
                                        text + "' holds '" + tok + "', not a non-negative integer");
      }
      values.push_back(v);
    }
    grades->push_back(std::move(values));
  }
  for (const auto& g : *grades) {
    if (g.size() != grades->front().size()) {
      return Status::invalid_argument("scope subgraph: node '" + n.name() + "': every grade of " +
                                      std::string(sdk::attr::kSubgraphMultiDimsInputDims) +
                                      " must have the same length ('" + text + "')");
    }
  }
  return Status::ok();
}

bool is_var(const Node& n) {
  return sdk::is_variable_like(n.type());
}

bool is_while(const Node& n) {
  return n.type() == sdk::op::kWhile || n.type() == "_While" || n.type() == "StatelessWhile";
}

// Nodes by scope index (`_subgraph_multi_dims_index`); Data and NetOutput cannot be in a scope.
Status collect_scopes(Graph& root, std::map<int64_t, std::vector<Node*>>* scopes_out) {
  std::map<int64_t, std::vector<Node*>>& scopes = *scopes_out;
  for (Node* n : root.nodes()) {
    const AttrValue* index = n->attrs().get(sdk::attr::kSubgraphMultiDimsIndex);
    if (!index || !index->as_int() || *index->as_int() < 0) continue;
    if (n->type() == sdk::op::kData || n->type() == sdk::op::kNetOutput) {
      return Status::invalid_argument("scope subgraph: " + n->type() + " '" + n->name() + "' has " +
                                      std::string(sdk::attr::kSubgraphMultiDimsIndex) + " " +
                                      std::to_string(*index->as_int()) +
                                      "; inputs and outputs cannot be in a scope");
    }
    scopes[*index->as_int()].push_back(n);
  }
  return Status::ok();
}

// A scope is closed under control edges: none enters or leaves it.
Status check_scope_control(int64_t index, const std::vector<Node*>& members) {
  std::set<const Node*> in(members.begin(), members.end());
  for (const Node* m : members) {
    for (const Node* c : m->control_inputs()) {
      if (!in.count(c)) {
        return Status::failed_precondition("scope subgraph: control edge '" + c->name() + "' -> '" +
                                           m->name() + "' enters scope " + std::to_string(index));
      }
    }
    for (const Node* c : m->control_outputs()) {
      if (!in.count(c)) {
        return Status::failed_precondition("scope subgraph: control edge '" + m->name() + "' -> '" +
                                           c->name() + "' leaves scope " + std::to_string(index));
      }
    }
  }
  return Status::ok();
}

// An inner Data with grades: the flattened grades, and the declared shape with its -1 dims filled from the
// largest grade (by the product of its values).
Status apply_grades(Node* d) {
  const std::string text = d->attrs().get_string(sdk::attr::kSubgraphMultiDimsInputDims);
  if (text.empty()) return Status::ok();
  std::vector<std::vector<int64_t>> g;
  GS_RETURN_IF_ERROR(parse_grades(*d, text, &g));
  std::vector<int64_t> flat;
  for (const auto& grade : g) flat.insert(flat.end(), grade.begin(), grade.end());
  d->attrs().set(sdk::attr::kOpMultiDimsInputDims, AttrValue::Ints(flat));
  const std::string shape_text = d->attrs().get_string(sdk::attr::kSubgraphMultiDimsInputShape);
  const size_t colon = shape_text.find(':');
  if (colon == std::string::npos) return Status::ok();
  std::vector<int64_t> dims;
  for (const std::string& tok : split(shape_text.substr(colon + 1), ',')) {
    int64_t v = 0;
    if (!parse_int(tok, &v)) {
      return Status::invalid_argument("scope subgraph: Data '" + d->name() +
                                      "': " + std::string(sdk::attr::kSubgraphMultiDimsInputShape) + " '" +
                                      shape_text + "' holds '" + tok + "', not an integer");
    }
    dims.push_back(v);
  }
  size_t best = 0;
  int64_t best_product = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    int64_t p = 1;
    for (int64_t v : g[i]) p *= std::max<int64_t>(v, 1);
    if (p > best_product) {
      best_product = p;
      best = i;
    }
  }
  size_t k = 0;
  for (int64_t& v : dims) {
    if (v == -1 && k < g[best].size()) v = g[best][k++];
  }
  d->attrs().set(sdk::attr::kOpMaxShape, AttrValue::Ints(dims));
  return Status::ok();
}

}  // namespace

Status CreateSubGraphWithScope::run(Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  std::map<int64_t, std::vector<Node*>> scopes;
  GS_RETURN_IF_ERROR(collect_scopes(root, &scopes));
  if (scopes.empty()) return Status::ok();
  std::vector<sdk::FrameSpec> specs;
  std::vector<int64_t> indices;
  for (auto& [index, members] : scopes) {
    GS_RETURN_IF_ERROR(check_scope_control(index, members));
    // A scope that is one PartitionedCall already has its subgraph: it is marked, not wrapped again.
    if (members.size() == 1 && members[0]->type() == sdk::op::kPartitionedCall &&
        members[0]->subgraphs().size() == 1) {
      Graph* sub = members[0]->subgraphs()[0];
      sub->attrs().set(sdk::attr::kSubgraphIsMultiDims, AttrValue::Bool(true));
      sub->attrs().set(sdk::attr::kNoNeedDynamicShapePartition, AttrValue::Bool(true));
      *changed = true;
      continue;
    }
    sdk::FrameSpec s;
    s.members = members;
    s.subgraph_name = root.unique_subgraph_name(root.name() + "_scope_subgraph_" + std::to_string(index));
    s.call_name = root.unique_node_name("scope_partitioned_call_" + std::to_string(index));
    s.subgraph_attrs.set(sdk::attr::kSubgraphIsMultiDims, AttrValue::Bool(true));
    s.subgraph_attrs.set(sdk::attr::kNoNeedDynamicShapePartition, AttrValue::Bool(true));
    if (const AttrValue* session = root.attrs().get(sdk::attr::kSessionGraphId))
      s.subgraph_attrs.set(sdk::attr::kSessionGraphId, *session);
    specs.push_back(std::move(s));
    indices.push_back(index);
  }
  if (specs.empty()) return Status::ok();
  // The grades each consumer declares travel with its external input onto the inner Data.
  std::map<const Node*, std::vector<std::vector<int64_t>>> grades;
  for (const sdk::FrameSpec& s : specs) {
    for (const Node* m : s.members) {
      const std::string text = m->attrs().get_string(sdk::attr::kSubgraphMultiDimsInputDims);
      if (text.empty()) continue;
      GS_RETURN_IF_ERROR(parse_grades(*m, text, &grades[m]));
    }
  }
  std::vector<sdk::Frame> frames;
  sdk::FrameOptions options;
  options.copy_to_inner_data = {std::string(sdk::attr::kSubgraphMultiDimsInputShape),
                                std::string(sdk::attr::kSubgraphMultiDimsInputDims)};
  GS_RETURN_IF_ERROR(sdk::build_frames(root, specs, options, &frames));
  for (size_t f = 0; f < frames.size(); ++f) {
    for (Node* d : frames[f].subgraph->nodes()) {
      if (d->type() == sdk::op::kData) GS_RETURN_IF_ERROR(apply_grades(d));
    }
    ctx.log(sdk::LogLevel::kInfo, "scope " + std::to_string(indices[f]) + ": " +
                                      std::to_string(specs[f].members.size()) + " nodes in '" +
                                      frames[f].subgraph->name() + "'");
  }
  *changed = true;
  return Status::ok();
}

Status SplitVariableIntoSubgraph::run(Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  std::vector<Graph*> graphs{&root};
  graphs.insert(graphs.end(), root.subgraphs().begin(), root.subgraphs().end());
  for (Graph* g : graphs) {
    for (Node* var : g->node_list()) {
      if (!is_var(*var) || var->num_outputs() == 0) continue;
      for (const sdk::InPort use : std::vector<sdk::InPort>(var->consumers(0))) {
        Node* consumer = use.node;
        const std::vector<Graph*> subs = consumer->subgraphs();
        if (subs.empty()) continue;
        if (consumer->type() == sdk::op::kPartitionedCall &&
            subs[0]->attrs().get_bool(sdk::attr::kIsUnknownShape, false))
          continue;  // flattened after build: a copy would duplicate the variable in the parent
        bool changed_here = false;
        for (Graph* sub : subs) {
          Node* inner = nullptr;
          for (Node* d : sub->nodes()) {
            if (d->type() == sdk::op::kData &&
                d->attrs().get_int(sdk::attr::kParentNodeIndex, -1) == use.index)
              inner = d;
          }
          if (!inner || !inner->has_consumers()) continue;
          Node* copy = sub->find_node(var->name());
          if (!copy) {
            copy = sub->add_node(var->name(), var->type(), 0, 0);
            for (size_t o = 0; o < var->num_outputs(); ++o)
              copy->add_output(var->output_desc(o), var->output_name(o));
            for (const auto& [key, value] : var->attrs().entries()) {
              if (!value.as_graph() && !value.as_graphs()) copy->attrs().set(key, value);
            }
            // A RefData inside a gear branch takes the branch's shape for it.
            if (var->type() == sdk::op::kRefData && inner->attrs().has(sdk::attr::kMbatchOriginInputDims)) {
              copy->mutable_output_desc(0).shape = inner->output_desc(0).shape;
              copy->attrs().set(sdk::attr::kMbatchOriginInputDims,
                                *inner->attrs().get(sdk::attr::kMbatchOriginInputDims));
            }
          }
          for (const sdk::InPort c : std::vector<sdk::InPort>(inner->consumers(0))) {
            sub->disconnect_input(c);
            GS_RETURN_IF_ERROR(sub->add_edge({copy, 0}, c));
          }
          GS_RETURN_IF_ERROR(sub->add_control_edge(inner, copy));
          changed_here = true;
        }
        if (changed_here && is_while(*consumer) && static_cast<size_t>(use.index) < consumer->num_outputs()) {
          // The loop hands the variable through unchanged: its consumers read the variable itself.
          for (const sdk::InPort c : std::vector<sdk::InPort>(consumer->consumers(use.index))) {
            g->disconnect_input(c);
            GS_RETURN_IF_ERROR(g->add_edge({var, 0}, c));
            GS_RETURN_IF_ERROR(g->add_control_edge(consumer, c.node));
          }
        }
        if (changed_here) {
          *changed = true;
          ctx.log(sdk::LogLevel::kInfo,
                  "variable '" + var->name() + "' copied into the subgraphs of '" + consumer->name() + "'");
        }
      }
    }
  }
  return Status::ok();
}

}  // namespace graphsplit::plugins::multibatch
