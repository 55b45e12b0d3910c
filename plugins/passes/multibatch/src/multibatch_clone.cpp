#include "multibatch_clone.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "graphsplit/kernels/shape_inference.h"
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

namespace {

// One application of the pass: the steps of GE's MultiBatchClonePass in order, sharing what they find.
class CloneJob {
 public:
  CloneJob(Graph& root, sdk::PassContext& ctx) : root_(root), ctx_(ctx) {}

  // False (and nothing changed) when no gear option is set.
  Status parse(bool* has_gears) {
    const sdk::OptionValues& ge = ctx_.ge_options();
    sdk::GearOptionText text{ge.get_string("ge.inputShape"), ge.get_string("ge.dynamicBatchSize"),
                             ge.get_string("ge.dynamicImageSize"), ge.get_string("ge.dynamicDims"),
                             ge.get_string("ge.inputFormat")};
    GS_RETURN_IF_ERROR(sdk::parse_gear_options(text, &request_));
    *has_gears = request_.kind != sdk::GearKind::kNone;
    if (!*has_gears) return Status::ok();
    GS_RETURN_IF_ERROR(sdk::distribute_gears(request_, &per_gear_));
    gears_ = per_gear_.size();
    return Status::ok();
  }

  Status apply() {
    GS_RETURN_IF_ERROR(collect_io());
    GS_RETURN_IF_ERROR(match_inputs());
    GS_RETURN_IF_ERROR(build_branches());
    GS_RETURN_IF_ERROR(infer_branches());
    add_case_outputs();
    GS_RETURN_IF_ERROR(prune_direct_outputs());
    GS_RETURN_IF_ERROR(build_selector());
    remove_old_operators();
    GS_RETURN_IF_ERROR(rewire_net_output());
    GS_RETURN_IF_ERROR(set_root_data());
    set_case_attributes();
    GS_RETURN_IF_ERROR(sdk::topological_sort(root_, sdk::TopoSortMode::kStableRDFS));
    std::string shown;
    for (size_t g = 0; g < gears_; ++g) shown += (g ? "; " : "") + dims_text(request_.gears[g]);
    ctx_.log(sdk::LogLevel::kInfo, std::to_string(gears_) + " gears (" + shown + "): Case '" +
                                       case_node_->name() + "' with branches Batch_0..Batch_" +
                                       std::to_string(gears_ - 1));
    return Status::ok();
  }

 private:
  std::string suffix(size_t g) const { return kSuffix + std::to_string(g); }
  Node* branch_output(size_t g) const { return branches_[g]->find_node(net_output_->name() + suffix(g)); }

  // P06: the Data nodes in `index` order, the Consts, exactly one NetOutput.
  Status collect_io() {
    std::vector<Node*> outputs;
    for (Node* n : root_.nodes()) {
      if (sdk::is_data_like(n->type()) && n->num_inputs() == 0)
        data_.push_back(n);
      else if (sdk::is_const_like(n->type()) && n->num_inputs() == 0)
        consts_.push_back(n);
      else if (n->type() == sdk::op::kNetOutput)
        outputs.push_back(n);
    }
    if (data_.empty())
      return Status::failed_precondition("multi-batch: graph '" + root_.name() + "' has no Data");
    if (outputs.size() != 1) {
      return Status::failed_precondition("multi-batch: graph '" + root_.name() + "' has " +
                                         std::to_string(outputs.size()) +
                                         " NetOutput nodes; exactly one is needed");
    }
    net_output_ = outputs.front();
    std::stable_sort(data_.begin(), data_.end(), [](const Node* a, const Node* b) {
      return a->attrs().get_int(sdk::attr::kIndex, 0) < b->attrs().get_int(sdk::attr::kIndex, 0);
    });
    return Status::ok();
  }

  // Each --input_shape entry names a Data; P07: every Data with an unknown dimension has an entry.
  Status match_inputs() {
    for (size_t i = 0; i < request_.inputs.size(); ++i) {
      const std::string& name = request_.inputs[i].name;
      auto it = std::find_if(data_.begin(), data_.end(),
                             [&](const Node* d) { return d->name() == name || d->output_name(0) == name; });
      if (it == data_.end()) {
        std::string names;
        for (const Node* x : data_) names += (names.empty() ? "" : ", ") + x->output_name(0);
        return fail("E10001", "--input_shape names '" + name +
                                  "', which is not an input of the model (inputs: " + names + ")");
      }
      user_position_[*it] = i;
    }
    for (Node* d : data_) {
      if (!d->output_desc(0).shape.is_static() && !user_position_.count(d)) {
        return fail("E10001", "input '" + d->output_name(0) +
                                  "' has an unknown dimension but no --input_shape entry; all dynamic inputs "
                                  "must be set");
      }
    }
    return Status::ok();
  }

  // graphsplit's shape inference on each branch, with its gear's input shapes (the branches are independent
  // subgraphs, each with its own symbol table, so they are inferred on every core at once). Returns an error
  // naming the gear; logs how many values stay non-static (data-dependent shapes).
  Status infer_branches() {
    const auto start = std::chrono::steady_clock::now();
    std::vector<Status> inferred(gears_, Status::ok());
    std::vector<size_t> unknown(gears_, 0);
    auto infer = [&](size_t g) {
      kernels::ShapeInferenceOptions options;
      options.fold_constants = false;  // the branches share the root's Consts; folding is shape.infer's
      inferred[g] = kernels::infer_shapes(*branches_[g], options, nullptr);
      for (const Node* n : branches_[g]->nodes()) {
        for (size_t o = 0; o < n->num_outputs(); ++o) {
          const sdk::TensorDesc& d = n->output_desc(o);
          if (d.kind == sdk::ValueKind::kTensor && !d.shape.is_static()) ++unknown[g];
        }
      }
    };
    std::atomic<size_t> next{0};
    std::vector<std::thread> workers;
    const size_t n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), gears_);
    for (size_t t = 0; t < n; ++t) {
      workers.emplace_back([&] {
        for (size_t g; (g = next.fetch_add(1)) < gears_;) infer(g);
      });
    }
    for (std::thread& w : workers) w.join();
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ctx_.log(sdk::LogLevel::kInfo, "shape inference of " + std::to_string(gears_) + " branches on " +
                                       std::to_string(n) +
                                       " threads: " + std::to_string(static_cast<int64_t>(ms)) + " ms");
    for (size_t g = 0; g < gears_; ++g) {
      if (!inferred[g].is_ok()) {
        return Status(inferred[g].code(), "multi-batch: shape inference for gear " + std::to_string(g) +
                                              ": " + inferred[g].message());
      }
      if (unknown[g] > 0) {
        ctx_.log(sdk::LogLevel::kWarning,
                 "gear " + std::to_string(g) + ": " + std::to_string(unknown[g]) +
                     " values keep an unknown shape after inference (data-dependent shapes)");
      }
    }
    return Status::ok();
  }

  // The Case (inputs: branch index, the Data, the Consts) and one cloned branch per gear. A NetOutput input
  // fed straight by a Data ("direct") is wired from the root Data, not through the Case.
  Status build_branches() {
    for (size_t i = 0; i < net_output_->num_inputs(); ++i) {
      const sdk::OutPort p = net_output_->input(i);
      if (p.node && sdk::is_data_like(p.node->type()) && p.node->num_inputs() == 0) direct_[i] = p.node;
    }
    std::map<const Node*, int64_t> routed;
    for (size_t i = 0; i < data_.size(); ++i) routed[data_[i]] = static_cast<int64_t>(1 + i);
    for (size_t i = 0; i < consts_.size(); ++i)
      routed[consts_[i]] = static_cast<int64_t>(1 + data_.size() + i);
    case_node_ =
        root_.add_node(root_.unique_node_name(kCase), sdk::op::kCase, 1 + data_.size() + consts_.size(), 0);
    // The Consts are wired at once: inference inside the branches reads their values through the Case.
    for (size_t i = 0; i < consts_.size(); ++i)
      GS_RETURN_IF_ERROR(
          root_.add_edge({consts_[i], 0}, {case_node_, static_cast<int32_t>(1 + data_.size() + i)}));
    for (size_t g = 0; g < gears_; ++g) {
      Graph* branch =
          root_.add_subgraph(root_.unique_subgraph_name("Batch_" + std::to_string(g)), case_node_);
      if (!branch) return Status::internal("multi-batch: cannot register branch Batch_" + std::to_string(g));
      Cloner cloner(root_, suffix(g));
      GS_RETURN_IF_ERROR(cloner.clone(root_, *branch, routed, case_node_));
      branches_.push_back(branch);
      // Inner Data take the gear's shapes.
      for (Node* d : data_) {
        Node* inner = branch->find_node(d->name() + suffix(g));
        if (auto pos = user_position_.find(d); pos != user_position_.end()) {
          inner->mutable_output_desc(0).shape = sdk::Shape(per_gear_[g][pos->second]);
          inner->attrs().set(sdk::attr::kMbatchOriginInputDims,
                             AttrValue::Ints(request_.inputs[pos->second].dims));
        }
      }
      for (const auto& [index, d] : direct_)
        branch->disconnect_input({branch_output(g), static_cast<int32_t>(index)});
    }
    return Status::ok();
  }

  // One Case output per kept NetOutput input: the dimensions the gears agree on, -1 where they differ.
  void add_case_outputs() {
    for (size_t i = 0; i < net_output_->num_inputs(); ++i) {
      if (!direct_.count(i)) kept_.push_back(i);
    }
    for (size_t k : kept_) {
      sdk::TensorDesc desc;
      for (size_t g = 0; g < gears_; ++g) {
        const sdk::OutPort p = branch_output(g)->input(k);
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
      const sdk::OutPort src = net_output_->input(k);
      case_node_->add_output(desc, src.node ? src.node->output_name(src.index) : std::string());
    }
  }

  // PruneDirectOutput: each branch NetOutput keeps the used inputs, shifted down over the pruned ones.
  Status prune_direct_outputs() {
    for (size_t g = 0; g < gears_ && !direct_.empty(); ++g) {
      Graph& b = *branches_[g];
      Node* inner_out = branch_output(g);
      std::vector<sdk::OutPort> sources;
      for (size_t i : kept_) sources.push_back(inner_out->input(i));
      std::vector<Node*> control(inner_out->control_inputs().begin(), inner_out->control_inputs().end());
      const sdk::AttrMap attrs = inner_out->attrs();
      const std::string name = inner_out->name();
      b.remove_node(inner_out);
      Node* fresh = b.add_node(name, sdk::op::kNetOutput, kept_.size(), 0);
      fresh->attrs() = attrs;
      for (size_t k = 0; k < sources.size(); ++k)
        GS_RETURN_IF_ERROR(b.add_edge(sources[k], {fresh, static_cast<int32_t>(k)}));
      for (Node* c : control) GS_RETURN_IF_ERROR(b.add_control_edge(c, fresh));
    }
    for (Graph* b : branches_) GS_RETURN_IF_ERROR(sdk::topological_sort(*b, sdk::TopoSortMode::kStableRDFS));
    return Status::ok();
  }

  // The gear selector in the root: shape Data -> MapIndex (with the gear table) -> Case, and the Case's data.
  Status build_selector() {
    const size_t gear_len = request_.gears.front().size();
    shape_data_ = root_.add_node(root_.unique_node_name(kShapeData), sdk::op::kData, 0, 0);
    sdk::TensorDesc d;
    d.dtype = sdk::DataType::kInt32;
    d.shape = sdk::Shape({static_cast<int64_t>(gear_len)});
    shape_data_->add_output(d, kShapeData);
    shape_data_->attrs().set(sdk::attr::kIndex, AttrValue::Int(static_cast<int64_t>(data_.size())));
    shape_data_->attrs().set(sdk::attr::kIsMultiBatchShapeData, AttrValue::Bool(true));
    shape_data_->attrs().set(sdk::attr::kMbatchInsertedNode, AttrValue::Bool(true));
    shape_data_->attrs().set(sdk::attr::kHostTensor, AttrValue::Bool(true));
    std::vector<int64_t> all_gears;
    for (const auto& g : request_.gears) all_gears.insert(all_gears.end(), g.begin(), g.end());
    shape_const_ = root_.add_node(root_.unique_node_name(kShapeConst), sdk::op::kConst, 0, 0);
    sdk::Tensor table =
        int32_tensor({static_cast<int64_t>(gears_), static_cast<int64_t>(gear_len)}, all_gears);
    shape_const_->add_output(table.desc(), kShapeConst);
    shape_const_->attrs().set(sdk::attr::kValue, AttrValue::OfTensor(table));
    map_index_ = root_.add_node(root_.unique_node_name(kMapIndex), sdk::op::kMapIndex, 2, 0);
    d.shape = sdk::Shape(std::vector<int64_t>{});
    map_index_->add_output(d, kMapIndex);
    map_index_->attrs().set(sdk::attr::kDomain, AttrValue::String("graphsplit"));
    GS_RETURN_IF_ERROR(root_.add_edge({shape_data_, 0}, {map_index_, 0}));
    GS_RETURN_IF_ERROR(root_.add_edge({shape_const_, 0}, {map_index_, 1}));
    GS_RETURN_IF_ERROR(root_.add_edge({map_index_, 0}, {case_node_, 0}));
    for (size_t i = 0; i < data_.size(); ++i)
      GS_RETURN_IF_ERROR(root_.add_edge({data_[i], 0}, {case_node_, static_cast<int32_t>(1 + i)}));
    return Status::ok();
  }

  // The old operators go; Data, Consts and NetOutput stay.
  // All at once: searching the Data and Const lists per node, and removing nodes and subgraphs one by one
  // (each removal searches its producers' consumer lists and the root's subgraph list), was quadratic in a
  // model with many constants, a shared input or many control-flow nodes.
  void remove_old_operators() {
    std::vector<char> keep(root_.id_bound(), 0);
    for (const Node* n : {case_node_, shape_data_, shape_const_, map_index_, net_output_}) {
      if (n) keep[static_cast<size_t>(n->id())] = 1;
    }
    for (const Node* n : data_) keep[static_cast<size_t>(n->id())] = 1;
    for (const Node* n : consts_) keep[static_cast<size_t>(n->id())] = 1;
    std::vector<Node*> doomed;
    std::vector<Graph*> subgraphs;
    for (Node* n : root_.nodes()) {
      if (keep[static_cast<size_t>(n->id())]) continue;
      doomed.push_back(n);
      for (Graph* sub : n->subgraphs()) subgraphs.push_back(sub);
    }
    root_.remove_subgraphs(subgraphs);
    root_.remove_nodes(doomed);
  }

  Status rewire_net_output() {
    for (size_t i = 0; i < net_output_->num_inputs(); ++i)
      root_.disconnect_input({net_output_, static_cast<int32_t>(i)});
    for (Node* c : std::vector<Node*>(net_output_->control_inputs()))
      (void)root_.remove_control_edge(c, net_output_);
    for (size_t i = 0, k = 0; i < net_output_->num_inputs(); ++i) {
      if (auto it = direct_.find(i); it != direct_.end()) {
        GS_RETURN_IF_ERROR(root_.add_edge({it->second, 0}, {net_output_, static_cast<int32_t>(i)}));
      } else {
        GS_RETURN_IF_ERROR(
            root_.add_edge({case_node_, static_cast<int32_t>(k++)}, {net_output_, static_cast<int32_t>(i)}));
      }
    }
    return root_.add_control_edge(case_node_, net_output_);
  }

  // The gear (of an input's gears) with the most elements; the first wins ties.
  Status largest_gear(size_t position, size_t* best) const {
    int64_t best_elements = -1;
    for (size_t g = 0; g < gears_; ++g) {
      int64_t elements = 1;
      for (int64_t d : per_gear_[g][position]) {
        if (d == 0) continue;
        if (elements > INT64_MAX / d)
          return Status::invalid_argument("multi-batch: gear " + std::to_string(g) +
                                          " overflows int64 elements");
        elements *= d;
      }
      if (elements > best_elements) {
        best_elements = elements;
        *best = g;
      }
    }
    return Status::ok();
  }

  // Root Data with gear dimensions take the largest gear's shape, with GE's bookkeeping.
  Status set_root_data() {
    std::vector<int64_t> unknown_data;
    for (size_t i = 0; i < data_.size(); ++i) {
      auto pos = user_position_.find(data_[i]);
      if (pos == user_position_.end()) continue;
      const std::vector<int64_t>& origin = request_.inputs[pos->second].dims;
      if (std::count(origin.begin(), origin.end(), -1) == 0) continue;
      unknown_data.push_back(static_cast<int64_t>(i));
      size_t best = 0;
      GS_RETURN_IF_ERROR(largest_gear(pos->second, &best));
      Node* d = data_[i];
      d->mutable_output_desc(0).shape = sdk::Shape(per_gear_[best][pos->second]);
      std::vector<int64_t> where;
      for (size_t j = 0; j < origin.size(); ++j) {
        if (origin[j] == -1) where.push_back(static_cast<int64_t>(j));
      }
      d->attrs().set(sdk::attr::kDynamicBatchUnknownDimIndex, AttrValue::Ints(where));
      d->attrs().set(sdk::attr::kMbatchOriginInputDims, AttrValue::Ints(origin));
      d->attrs().set("mbatch-switch-name", AttrValue::String(case_node_->name()));
      GS_RETURN_IF_ERROR(root_.add_control_edge(d, shape_data_));
    }
    shape_data_->attrs().set(sdk::attr::kDynamicBatchUnknownDataIndex, AttrValue::Ints(unknown_data));
    return Status::ok();
  }

  // GE's Case attributes; its input descriptors come from the producers.
  void set_case_attributes() {
    case_node_->attrs().set("branches", AttrValue::Graphs(branches_));
    case_node_->attrs().set(sdk::attr::kBatchNum, AttrValue::Int(static_cast<int64_t>(gears_)));
    for (size_t g = 0; g < gears_; ++g) {
      case_node_->attrs().set(std::string(sdk::attr::kPredValuePrefix) + std::to_string(g),
                              AttrValue::Ints(request_.gears[g]));
    }
    std::vector<std::string> order;
    for (const sdk::GearInput& in : request_.inputs) order.push_back(in.name);
    case_node_->attrs().set("user_designate_shape_order", AttrValue::Strings(order));
    case_node_->attrs().set(sdk::attr::kMbatchInsertedNode, AttrValue::Bool(true));
    case_node_->attrs().set("mbatch_dynamic_type", AttrValue::String(sdk::gear_kind_name(request_.kind)));
    root_.attrs().set(sdk::attr::kEnableDynamicBatch, AttrValue::Bool(true));
  }

  Graph& root_;
  sdk::PassContext& ctx_;
  sdk::GearRequest request_;
  std::vector<std::vector<std::vector<int64_t>>> per_gear_;  // gear -> input -> dims
  size_t gears_ = 0;
  std::vector<Node*> data_, consts_;
  Node* net_output_ = nullptr;
  std::map<Node*, size_t> user_position_;  // Data -> its --input_shape entry
  std::map<size_t, Node*> direct_;         // NetOutput input -> the Data feeding it directly
  std::vector<size_t> kept_;               // NetOutput inputs that come from the Case
  Node* case_node_ = nullptr;
  std::vector<Graph*> branches_;
  Node *shape_data_ = nullptr, *shape_const_ = nullptr, *map_index_ = nullptr;
};

}  // namespace

Status MultiBatchClone::run(Graph& root, sdk::PassContext& ctx, bool* changed) {
  *changed = false;
  CloneJob job(root, ctx);
  bool has_gears = false;
  GS_RETURN_IF_ERROR(job.parse(&has_gears));
  if (!has_gears) return Status::ok();
  GS_RETURN_IF_ERROR(job.apply());
  *changed = true;
  return Status::ok();
}

}  // namespace graphsplit::plugins::multibatch
