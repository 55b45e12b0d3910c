#include "stage_partitioner.h"

#include <algorithm>
#include <limits>
#include <map>

#include "graphsplit/sdk/ir/topo.h"
#include "graphsplit/sdk/partition_frames.h"

namespace graphsplit::plugins::stage {
namespace {

using sdk::AttrValue;
using sdk::Graph;
using sdk::Node;
using sdk::Status;

bool is_input_data(const Node& n) {
  if (!sdk::is_data_like(n.type())) return false;
  for (const sdk::OutPort& p : n.inputs()) {
    if (p.node) return false;
  }
  return true;
}

}  // namespace

Status StagePartitioner::partition(Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  // 1. Collect the tagged nodes by level.
  std::map<int64_t, std::vector<Node*>> levels;
  std::map<const Node*, int64_t> level_of;
  for (Node* n : root.nodes()) {
    const AttrValue* v = n->attrs().get(sdk::attr::kStageLevel);
    if (!v) continue;
    if (!v->as_int() || *v->as_int() < 0 || *v->as_int() > std::numeric_limits<uint32_t>::max()) {
      return Status::invalid_argument("node '" + n->name() + "' (" + n->type() +
                                      "): _stage_level must be an integer in [0, 4294967295], got a " +
                                      std::string(sdk::to_string(v->kind())));
    }
    level_of[n] = *v->as_int();
    if (!is_input_data(*n)) levels[*v->as_int()].push_back(n);
  }
  if (levels.empty()) return Status::ok();
  // 2. Propagate upstream, lowest level first: an untagged producer joins the lowest stage that reaches it.
  for (auto& [level, members] : levels) {
    std::vector<Node*> stack(members.begin(), members.end());
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      std::vector<Node*> preds;
      for (const sdk::OutPort& p : n->inputs()) {
        if (p.node) preds.push_back(p.node);
      }
      preds.insert(preds.end(), n->control_inputs().begin(), n->control_inputs().end());
      for (Node* p : preds) {
        auto it = level_of.find(p);
        if (it != level_of.end())
          continue;  // tagged already: same level continues nowhere new, another stops
        level_of[p] = level;
        p->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(level));
        if (is_input_data(*p)) continue;  // tagged, but neither traversed nor collected
        members.push_back(p);
        stack.push_back(p);
      }
    }
  }
  // 3. The tail stage: everything still untagged, except input Data and NetOutput, gets max + 1.
  const int64_t tail = levels.rbegin()->first + 1;
  for (Node* n : root.nodes()) {
    if (level_of.count(n) || is_input_data(*n) || n->type() == sdk::op::kNetOutput) continue;
    n->attrs().set(sdk::attr::kStageLevel, AttrValue::Int(tail));
    levels[tail].push_back(n);
  }
  // 4. One frame per level.
  std::vector<sdk::FrameSpec> specs;
  for (auto& [level, members] : levels) {
    sdk::FrameSpec s;
    s.members = members;
    s.subgraph_name = root.unique_subgraph_name("Subgraph_Level_" + std::to_string(level));
    s.call_name = root.unique_node_name("Subgraph_Level_" + std::to_string(level) + "_PartitionedCall");
    s.call_attrs.set(sdk::attr::kStageLevel, AttrValue::Int(level));
    s.call_attrs.set(sdk::attr::kForceUnknownShape, AttrValue::Bool(true));
    s.subgraph_attrs.set(sdk::attr::kStageLevel, AttrValue::Int(level));
    specs.push_back(std::move(s));
  }
  sdk::FrameOptions options;
  options.inner_data_prefix = "args";
  options.inner_output_name = "output";
  std::vector<sdk::Frame> frames;
  Status s = sdk::build_frames(root, specs, options, &frames);
  if (!s.is_ok()) {
    return Status::invalid_argument("the _stage_level tags form a cycle between stages (" + s.message() +
                                    ")");
  }
  // 5. Stages in level order where the edges allow it.
  std::vector<Node*> order = root.node_list();
  std::stable_sort(order.begin(), order.end(), [](const Node* a, const Node* b) {
    const int64_t la = a->attrs().get_int(sdk::attr::kStageLevel, std::numeric_limits<uint32_t>::max());
    const int64_t lb = b->attrs().get_int(sdk::attr::kStageLevel, std::numeric_limits<uint32_t>::max());
    return la < lb;
  });
  GS_RETURN_IF_ERROR(root.reorder(order));
  GS_RETURN_IF_ERROR(sdk::topological_sort(root, sdk::TopoSortMode::kStableRDFS));
  ctx.log(sdk::LogLevel::kInfo, std::to_string(frames.size()) + " pipeline stages");
  *changed = true;
  return Status::ok();
}

}  // namespace graphsplit::plugins::stage
