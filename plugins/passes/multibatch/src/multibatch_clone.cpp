#include "multibatch_clone.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "graphsplit/sdk/gears.h"
#include "graphsplit/sdk/ir/topo.h"

namespace graphsplit::plugins::multibatch {
namespace {

using sdk::AttrValue;
using sdk::Graph;
using sdk::Node;
using sdk::Status;

constexpr const char* kSuffix = "_ascend_mbatch_batch_";
constexpr const char* kShapeData = "ascend_mbatch_shape_data";
constexpr const char* kShapeConst = "ascend_mbatch_shape_const";
constexpr const char* kMapIndex = "ascend_mbatch_shape_mapindex";
constexpr const char* kCase = "ascend_mbatch_shape_case";

Status fail(const std::string& code, const std::string& what) {
  return Status::invalid_argument(code + ": multi-batch: " + what);
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : ",") + std::to_string(d);
  return s;
}

// Copies `src` (nodes, edges, attributes, nested subgraphs) into `dst` with every node and subgraph name
// suffixed. `data_index` turns chosen nodes into inner Data (GE routes the root's Data and Consts through the
// Case). Records, for every copied node, the original's graph and name.
class Cloner {
 public:
  Cloner(Graph& tree, std::string suffix) : tree_(tree), suffix_(std::move(suffix)) {}

  Status clone(const Graph& src, Graph& dst, const std::map<const Node*, int64_t>& data_index,
               const Node* skip = nullptr) {
    std::vector<Node*> copy(src.id_bound(), nullptr);  // by source node id
    auto copy_of = [&](const Node* n) { return copy[static_cast<size_t>(n->id())]; };
    created_.push_back(&dst);
    std::vector<const Node*> nodes;
    for (const Node* n : src.nodes()) {
      if (n != skip) nodes.push_back(n);
    }
    for (const Node* n : nodes) {
      auto it = data_index.find(n);
      const bool to_data = it != data_index.end();
      Node* c = dst.add_node(n->name() + suffix_,
                             to_data ? std::string_view(sdk::op::kData) : std::string_view(n->type()),
                             to_data ? 0 : n->num_inputs(), 0);
      if (!c) return Status::internal("multi-batch: node name '" + n->name() + suffix_ + "' is taken");
      for (size_t o = 0; o < n->num_outputs(); ++o) c->add_output(n->output_desc(o), n->output_name(o));
      for (const auto& [key, value] : n->attrs().entries()) {
        if (value.as_graph() || value.as_graphs()) continue;
        if (to_data && (key == "value" || key == sdk::attr::kIndex)) continue;
        c->attrs().set(key, value);
      }
      if (to_data) c->attrs().set(sdk::attr::kParentNodeIndex, AttrValue::Int(it->second));
      copy[static_cast<size_t>(n->id())] = c;
    }
    for (const Node* n : nodes) {
      Node* c = copy_of(n);
      if (data_index.count(n)) continue;
      for (size_t i = 0; i < n->num_inputs(); ++i) {
        const sdk::OutPort p = n->input(i);
        if (p.node)
          GS_RETURN_IF_ERROR(dst.add_edge({copy_of(p.node), p.index}, {c, static_cast<int32_t>(i)}));
      }
      for (const Node* ctrl : n->control_inputs()) GS_RETURN_IF_ERROR(dst.add_control_edge(copy_of(ctrl), c));
    }
    // Nested graphs: the copies are registered under the copied parent nodes.
    for (const Node* n : nodes) {
      Node* c = copy_of(n);
      for (const auto& [key, value] : n->attrs().entries()) {
        if (Graph* g = value.as_graph()) {
          Graph* sub = tree_.add_subgraph(tree_.unique_subgraph_name(g->name() + suffix_), c);
          GS_RETURN_IF_ERROR(clone(*g, *sub, {}));
          sub->attrs() = g->attrs();
          c->attrs().set(key, AttrValue::OfGraph(sub));
        } else if (const auto* gs = value.as_graphs()) {
          std::vector<Graph*> subs;
          for (Graph* g : *gs) {
            Graph* sub = tree_.add_subgraph(tree_.unique_subgraph_name(g->name() + suffix_), c);
            GS_RETURN_IF_ERROR(clone(*g, *sub, {}));
            sub->attrs() = g->attrs();
            subs.push_back(sub);
          }
          c->attrs().set(key, AttrValue::Graphs(subs));
        }
      }
    }
    return Status::ok();
  }

  // Shapes from the gear's own inference: each copied output takes the descriptor of the value of its name.
  // Returns how many outputs stay non-static.
  size_t adopt_shapes(const sdk::ValueDescs& values) {
    size_t unknown = 0;
    for (Graph* g : created_) {
      for (Node* copy : g->nodes()) {
        for (size_t o = 0; o < copy->num_outputs(); ++o) {
          auto it = values.find(copy->output_name(o));
          if (it != values.end() && it->second.kind == copy->output_desc(o).kind) {
            sdk::TensorDesc d = it->second;
            d.format = copy->output_desc(o).format;
            copy->mutable_output_desc(o) = d;
          }
          const sdk::TensorDesc& d = copy->output_desc(o);
          if (d.kind == sdk::ValueKind::kTensor && !d.shape.is_static()) ++unknown;
        }
      }
    }
    return unknown;
  }

 private:
  Graph& tree_;
  std::string suffix_;
  std::vector<Graph*> created_;  // the copies made, nested ones included
};

sdk::Tensor int32_tensor(std::vector<int64_t> dims, const std::vector<int64_t>& values) {
  sdk::TensorDesc d;
  d.dtype = sdk::DataType::kInt32;
  d.shape = sdk::Shape(std::move(dims));
  std::string bytes(values.size() * 4, '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    const auto v = static_cast<int32_t>(values[i]);
    std::memcpy(bytes.data() + 4 * i, &v, 4);
  }
  return sdk::Tensor(d, std::move(bytes));
}

}  // namespace

Status MultiBatchClone::run(Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  const sdk::OptionValues& ge = ctx.ge_options();
  sdk::GearOptionText text{ge.get_string("ge.inputShape"), ge.get_string("ge.dynamicBatchSize"),
                           ge.get_string("ge.dynamicImageSize"), ge.get_string("ge.dynamicDims"),
                           ge.get_string("ge.inputFormat")};
  sdk::GearRequest request;
  GS_RETURN_IF_ERROR(sdk::parse_gear_options(text, &request));
  if (request.kind == sdk::GearKind::kNone) return Status::ok();
  std::vector<std::vector<std::vector<int64_t>>> per_gear;
  GS_RETURN_IF_ERROR(sdk::distribute_gears(request, &per_gear));

  // Collect IO (P06): the Data nodes in `index` order, the Consts, exactly one NetOutput.
  std::vector<Node*> data, consts, outputs;
  for (Node* n : root.nodes()) {
    if (sdk::is_data_like(n->type()) && n->num_inputs() == 0)
      data.push_back(n);
    else if ((n->type() == sdk::op::kConst || n->type() == sdk::op::kConstant) && n->num_inputs() == 0)
      consts.push_back(n);
    else if (n->type() == sdk::op::kNetOutput)
      outputs.push_back(n);
  }
  if (data.empty())
    return Status::failed_precondition("multi-batch: graph '" + root.name() + "' has no Data");
  if (outputs.size() != 1) {
    return Status::failed_precondition("multi-batch: graph '" + root.name() + "' has " +
                                       std::to_string(outputs.size()) +
                                       " NetOutput nodes; exactly one is needed");
  }
  Node* net_output = outputs.front();
  std::stable_sort(data.begin(), data.end(), [](const Node* a, const Node* b) {
    return a->attrs().get_int(sdk::attr::kIndex, 0) < b->attrs().get_int(sdk::attr::kIndex, 0);
  });
  auto data_named = [&](const std::string& name) -> Node* {
    for (Node* d : data) {
      if (d->name() == name || d->output_name(0) == name) return d;
    }
    return nullptr;
  };
  std::map<Node*, size_t> user_position;
  for (size_t i = 0; i < request.inputs.size(); ++i) {
    Node* d = data_named(request.inputs[i].name);
    if (!d) {
      std::string names;
      for (const Node* x : data) names += (names.empty() ? "" : ", ") + x->output_name(0);
      return fail("E10001", "--input_shape names '" + request.inputs[i].name +
                                "', which is not an input of the model (inputs: " + names + ")");
    }
    user_position[d] = i;
  }
  // Every Data with an unknown dimension must be given a shape (P07).
  for (Node* d : data) {
    if (!d->output_desc(0).shape.is_static() && !user_position.count(d)) {
      return fail(
          "E10001",
          "input '" + d->output_name(0) +
              "' has an unknown dimension but no --input_shape entry; all dynamic inputs must be set");
    }
  }

  // The host's shape inference, once per gear, with that gear's static input shapes.
  const size_t gears = per_gear.size();
  // The first gear alone (the host may set itself up), the others on every core: the runs are independent.
  std::vector<sdk::ValueDescs> gear_values(gears);
  std::vector<Status> inferred(gears, Status::ok());
  auto infer = [&](size_t g) {
    sdk::InputDims dims;
    for (size_t i = 0; i < request.inputs.size(); ++i)
      dims.emplace_back(request.inputs[i].name, per_gear[g][i]);
    inferred[g] = ctx.infer_value_shapes(dims, &gear_values[g]);
  };
  infer(0);
  if (inferred[0].is_ok() && gears > 1) {
    std::atomic<size_t> next{1};
    std::vector<std::thread> workers;
    const size_t n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), gears - 1);
    for (size_t t = 0; t < n; ++t) {
      workers.emplace_back([&] {
        for (size_t g; (g = next.fetch_add(1)) < gears;) infer(g);
      });
    }
    for (std::thread& w : workers) w.join();
  }
  for (size_t g = 0; g < gears; ++g) {
    if (!inferred[g].is_ok()) {
      return Status(inferred[g].code(), "multi-batch: shape inference for gear " + std::to_string(g) + ": " +
                                            inferred[g].message());
    }
  }

  // Direct outputs: a NetOutput input fed straight by a Data is wired from the root Data, not through the
  // Case.
  std::map<size_t, Node*> direct;
  for (size_t i = 0; i < net_output->num_inputs(); ++i) {
    const sdk::OutPort p = net_output->input(i);
    if (p.node && sdk::is_data_like(p.node->type()) && p.node->num_inputs() == 0) direct[i] = p.node;
  }

  // The Case and its branches. Case inputs: branch index, then the Data, then the Consts.
  std::map<const Node*, int64_t> routed;
  for (size_t i = 0; i < data.size(); ++i) routed[data[i]] = static_cast<int64_t>(1 + i);
  for (size_t i = 0; i < consts.size(); ++i) routed[consts[i]] = static_cast<int64_t>(1 + data.size() + i);
  Node* case_node =
      root.add_node(root.unique_node_name(kCase), sdk::op::kCase, 1 + data.size() + consts.size(), 0);
  std::vector<Graph*> branches;
  std::vector<std::string> used_names;
  for (size_t g = 0; g < gears; ++g) {
    Graph* branch = root.add_subgraph(root.unique_subgraph_name("Batch_" + std::to_string(g)), case_node);
    if (!branch) return Status::internal("multi-batch: cannot register branch Batch_" + std::to_string(g));
    Cloner cloner(root, kSuffix + std::to_string(g));
    GS_RETURN_IF_ERROR(cloner.clone(root, *branch, routed, case_node));
    const size_t unknown = cloner.adopt_shapes(gear_values[g]);
    if (unknown > 0) {
      ctx.log(sdk::LogLevel::kWarning,
              "gear " + std::to_string(g) + ": " + std::to_string(unknown) +
                  " values keep an unknown shape after inference (data-dependent shapes)");
    }
    // Inner Data take the gear's shapes; the branch NetOutput's inputs are numbered.
    for (size_t i = 0; i < data.size(); ++i) {
      Node* inner = branch->find_node(data[i]->name() + kSuffix + std::to_string(g));
      if (auto pos = user_position.find(data[i]); pos != user_position.end()) {
        inner->mutable_output_desc(0).shape = sdk::Shape(per_gear[g][pos->second]);
        inner->attrs().set(sdk::attr::kMbatchOriginInputDims,
                           AttrValue::Ints(request.inputs[pos->second].dims));
      }
    }
    Node* inner_out = branch->find_node(net_output->name() + kSuffix + std::to_string(g));
    for (const auto& [index, d] : direct) branch->disconnect_input({inner_out, static_cast<int32_t>(index)});
    branches.push_back(branch);
  }

  // Case outputs: one per NetOutput input; PruneDirectOutput drops those fed directly by a Data.
  std::vector<size_t> kept;
  for (size_t i = 0; i < net_output->num_inputs(); ++i) {
    if (!direct.count(i)) kept.push_back(i);
  }
  for (size_t k = 0; k < kept.size(); ++k) {
    // The root's view of output k: dimensions the gears agree on, -1 where they differ.
    sdk::TensorDesc desc;
    for (size_t g = 0; g < gears; ++g) {
      Node* inner_out = branches[g]->find_node(net_output->name() + kSuffix + std::to_string(g));
      const sdk::OutPort p = inner_out->input(kept[k]);
      const sdk::TensorDesc& d = p.node->output_desc(p.index);
      if (g == 0) {
        desc = d;
      } else if (desc.shape.rank() == d.shape.rank() && !desc.shape.is_unknown_rank()) {
        for (size_t j = 0; j < d.shape.rank(); ++j) {
          if (desc.shape.dims()[j] != d.shape.dims()[j]) desc.shape.mutable_dims()[j] = -1;
        }
      } else {
        desc.shape = sdk::Shape::unknown_rank();
      }
    }
    case_node->add_output(desc,
                          net_output->input(kept[k]).node
                              ? net_output->input(kept[k]).node->output_name(net_output->input(kept[k]).index)
                              : std::string());
  }
  for (size_t g = 0; g < gears && !direct.empty(); ++g) {
    // PruneDirectOutput: the branch NetOutput keeps the used inputs, shifted down over the pruned ones.
    Graph& b = *branches[g];
    Node* inner_out = b.find_node(net_output->name() + kSuffix + std::to_string(g));
    std::vector<sdk::OutPort> sources;
    for (size_t i : kept) sources.push_back(inner_out->input(i));
    std::vector<Node*> control(inner_out->control_inputs().begin(), inner_out->control_inputs().end());
    const sdk::AttrMap attrs = inner_out->attrs();
    const std::string name = inner_out->name();
    b.remove_node(inner_out);
    Node* fresh = b.add_node(name, sdk::op::kNetOutput, kept.size(), 0);
    fresh->attrs() = attrs;
    for (size_t k = 0; k < sources.size(); ++k)
      GS_RETURN_IF_ERROR(b.add_edge(sources[k], {fresh, static_cast<int32_t>(k)}));
    for (Node* c : control) GS_RETURN_IF_ERROR(b.add_control_edge(c, fresh));
  }
  for (Graph* b : branches) GS_RETURN_IF_ERROR(sdk::topological_sort(*b, sdk::TopoSortMode::kStableRDFS));

  // The root: Data (largest gear's shape), Consts, shape index -> MapIndex -> Case, NetOutput.
  size_t gear_len = request.gears.front().size();
  Node* shape_data = root.add_node(root.unique_node_name(kShapeData), sdk::op::kData, 0, 0);
  {
    sdk::TensorDesc d;
    d.dtype = sdk::DataType::kInt32;
    d.shape = sdk::Shape({static_cast<int64_t>(gear_len)});
    shape_data->add_output(d, kShapeData);
    shape_data->attrs().set(sdk::attr::kIndex, AttrValue::Int(static_cast<int64_t>(data.size())));
    shape_data->attrs().set(sdk::attr::kIsMultiBatchShapeData, AttrValue::Bool(true));
    shape_data->attrs().set(sdk::attr::kMbatchInsertedNode, AttrValue::Bool(true));
    shape_data->attrs().set(sdk::attr::kHostTensor, AttrValue::Bool(true));
  }
  std::vector<int64_t> all_gears;
  for (const auto& g : request.gears) all_gears.insert(all_gears.end(), g.begin(), g.end());
  Node* shape_const = root.add_node(root.unique_node_name(kShapeConst), sdk::op::kConst, 0, 0);
  sdk::Tensor table = int32_tensor({static_cast<int64_t>(gears), static_cast<int64_t>(gear_len)}, all_gears);
  shape_const->add_output(table.desc(), kShapeConst);
  shape_const->attrs().set(sdk::attr::kValue, AttrValue::OfTensor(table));
  Node* map_index = root.add_node(root.unique_node_name(kMapIndex), sdk::op::kMapIndex, 2, 0);
  {
    sdk::TensorDesc d;
    d.dtype = sdk::DataType::kInt32;
    d.shape = sdk::Shape(std::vector<int64_t>{});
    map_index->add_output(d, kMapIndex);
    map_index->attrs().set(sdk::attr::kDomain, AttrValue::String("graphsplit"));
  }
  GS_RETURN_IF_ERROR(root.add_edge({shape_data, 0}, {map_index, 0}));
  GS_RETURN_IF_ERROR(root.add_edge({shape_const, 0}, {map_index, 1}));
  GS_RETURN_IF_ERROR(root.add_edge({map_index, 0}, {case_node, 0}));
  for (size_t i = 0; i < data.size(); ++i)
    GS_RETURN_IF_ERROR(root.add_edge({data[i], 0}, {case_node, static_cast<int32_t>(1 + i)}));
  for (size_t i = 0; i < consts.size(); ++i)
    GS_RETURN_IF_ERROR(root.add_edge({consts[i], 0}, {case_node, static_cast<int32_t>(1 + data.size() + i)}));

  // The old operators go; Data, Consts and NetOutput stay (NetOutput re-wired).
  std::vector<Node*> doomed;
  for (Node* n : root.nodes()) {
    if (n == case_node || n == shape_data || n == shape_const || n == map_index || n == net_output) continue;
    if (std::find(data.begin(), data.end(), n) != data.end()) continue;
    if (std::find(consts.begin(), consts.end(), n) != consts.end()) continue;
    doomed.push_back(n);
  }
  for (Node* n : doomed) {
    for (Graph* sub : n->subgraphs()) root.remove_subgraph(sub);
    root.remove_node(n);
  }
  for (size_t i = 0; i < net_output->num_inputs(); ++i)
    root.disconnect_input({net_output, static_cast<int32_t>(i)});
  for (Node* c : std::vector<Node*>(net_output->control_inputs()))
    (void)root.remove_control_edge(c, net_output);
  for (size_t i = 0, k = 0; i < net_output->num_inputs(); ++i) {
    if (auto it = direct.find(i); it != direct.end()) {
      GS_RETURN_IF_ERROR(root.add_edge({it->second, 0}, {net_output, static_cast<int32_t>(i)}));
    } else {
      GS_RETURN_IF_ERROR(
          root.add_edge({case_node, static_cast<int32_t>(k++)}, {net_output, static_cast<int32_t>(i)}));
    }
  }
  GS_RETURN_IF_ERROR(root.add_control_edge(case_node, net_output));

  // Root Data: the largest gear's shape (first wins ties), GE's bookkeeping.
  std::vector<int64_t> unknown_data;
  for (size_t i = 0; i < data.size(); ++i) {
    auto pos = user_position.find(data[i]);
    if (pos == user_position.end()) continue;
    const std::vector<int64_t>& origin = request.inputs[pos->second].dims;
    if (std::count(origin.begin(), origin.end(), -1) == 0) continue;
    unknown_data.push_back(static_cast<int64_t>(i));
    size_t best = 0;
    int64_t best_elements = -1;
    for (size_t g = 0; g < gears; ++g) {
      int64_t elements = 1;
      for (int64_t d : per_gear[g][pos->second]) {
        if (d == 0) continue;
        if (elements > INT64_MAX / d)
          return Status::invalid_argument("multi-batch: gear " + std::to_string(g) +
                                          " overflows int64 elements");
        elements *= d;
      }
      if (elements > best_elements) {
        best_elements = elements;
        best = g;
      }
    }
    Node* d = data[i];
    d->mutable_output_desc(0).shape = sdk::Shape(per_gear[best][pos->second]);
    std::vector<int64_t> where;
    for (size_t j = 0; j < origin.size(); ++j) {
      if (origin[j] == -1) where.push_back(static_cast<int64_t>(j));
    }
    d->attrs().set(sdk::attr::kDynamicBatchUnknownDimIndex, AttrValue::Ints(where));
    d->attrs().set(sdk::attr::kMbatchOriginInputDims, AttrValue::Ints(origin));
    d->attrs().set("mbatch-switch-name", AttrValue::String(case_node->name()));
    GS_RETURN_IF_ERROR(root.add_control_edge(d, shape_data));
  }
  shape_data->attrs().set(sdk::attr::kDynamicBatchUnknownDataIndex, AttrValue::Ints(unknown_data));
  // Case input descs come from the producers; its attributes are GE's.
  case_node->attrs().set("branches", AttrValue::Graphs(branches));
  case_node->attrs().set(sdk::attr::kBatchNum, AttrValue::Int(static_cast<int64_t>(gears)));
  for (size_t g = 0; g < gears; ++g)
    case_node->attrs().set("_pred_value_" + std::to_string(g), AttrValue::Ints(request.gears[g]));
  std::vector<std::string> order;
  for (const sdk::GearInput& in : request.inputs) order.push_back(in.name);
  case_node->attrs().set("user_designate_shape_order", AttrValue::Strings(order));
  case_node->attrs().set(sdk::attr::kMbatchInsertedNode, AttrValue::Bool(true));
  case_node->attrs().set("mbatch_dynamic_type", AttrValue::String(sdk::gear_kind_name(request.kind)));
  root.attrs().set(sdk::attr::kEnableDynamicBatch, AttrValue::Bool(true));
  GS_RETURN_IF_ERROR(sdk::topological_sort(root, sdk::TopoSortMode::kStableRDFS));
  std::string shown;
  for (size_t g = 0; g < gears; ++g) shown += (g ? "; " : "") + dims_text(request.gears[g]);
  ctx.log(sdk::LogLevel::kInfo, std::to_string(gears) + " gears (" + shown + "): Case '" + case_node->name() +
                                    "' with branches Batch_0..Batch_" + std::to_string(gears - 1));
  *changed = true;
  return Status::ok();
}

}  // namespace graphsplit::plugins::multibatch
