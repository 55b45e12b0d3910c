// ai.onnx.ml TreeEnsembleRegressor and TreeEnsembleClassifier: each row walks every tree from its root to a
// leaf; leaf weights add into per-target (per-class) scores, aggregated and post-transformed.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

enum class Mode { kLeq, kLt, kGte, kGt, kEq, kNeq, kLeaf };

struct TreeNode {
  Mode mode = Mode::kLeaf;
  int64_t feature = 0;
  double value = 0;
  int64_t yes = -1, no = -1;  // node indices
  bool missing_goes_yes = false;
  std::vector<std::pair<int64_t, double>> weights;  // (target or class, weight) at a leaf
};

struct Forest {
  std::vector<TreeNode> nodes;
  std::vector<int64_t> roots;
};

std::vector<double> floats_or_tensor(const KernelContext& ctx, const std::string& key) {
  if (auto f = ctx.attr_floats(key)) return {f->begin(), f->end()};
  if (const Tensor* t = ctx.attr_tensor(key + "_as_tensor")) return to_doubles(*t);
  return {};
}

Status parse_mode(const KernelContext& ctx, const std::string& m, Mode* out) {
  static const std::map<std::string, Mode> kModes = {{"BRANCH_LEQ", Mode::kLeq}, {"BRANCH_LT", Mode::kLt},
                                                     {"BRANCH_GTE", Mode::kGte}, {"BRANCH_GT", Mode::kGt},
                                                     {"BRANCH_EQ", Mode::kEq},   {"BRANCH_NEQ", Mode::kNeq},
                                                     {"LEAF", Mode::kLeaf}};
  auto it = kModes.find(m);
  if (it == kModes.end()) return ctx.error("unknown node mode '" + m + "'");
  *out = it->second;
  return Status::ok();
}

// The nodes, their children as indices, and the leaves' weights from
// `<prefix>_treeids/_nodeids/_ids/_weights`.
Status build_forest(const KernelContext& ctx, const std::string& prefix, Forest* f) {
  const auto ints = [&](const std::string& k) { return ctx.attr_ints(k).value_or(std::vector<int64_t>{}); };
  const std::vector<int64_t> tree = ints("nodes_treeids"), id = ints("nodes_nodeids"),
                             feat = ints("nodes_featureids");
  const std::vector<int64_t> yes = ints("nodes_truenodeids"), no = ints("nodes_falsenodeids");
  const std::vector<int64_t> missing = ints("nodes_missing_value_tracks_true");
  const std::vector<double> values = floats_or_tensor(ctx, "nodes_values");
  const sdk::AttrValue* modes = ctx.node->attrs().get("nodes_modes");
  const size_t n = tree.size();
  if (id.size() != n || feat.size() != n || values.size() != n || !modes || !modes->as_strings() ||
      modes->as_strings()->size() != n)
    return ctx.error("the nodes_* attributes differ in length");
  std::map<std::pair<int64_t, int64_t>, int64_t> index;
  for (size_t i = 0; i < n; ++i) index[{tree[i], id[i]}] = static_cast<int64_t>(i);
  f->nodes.resize(n);
  for (size_t i = 0; i < n; ++i) {
    TreeNode& t = f->nodes[i];
    GS_RETURN_IF_ERROR(parse_mode(ctx, (*modes->as_strings())[i], &t.mode));
    t.feature = feat[i];
    t.value = values[i];
    t.missing_goes_yes = i < missing.size() && missing[i] != 0;
    if (t.mode == Mode::kLeaf) continue;
    auto y = index.find({tree[i], i < yes.size() ? yes[i] : -1}),
         o = index.find({tree[i], i < no.size() ? no[i] : -1});
    if (y == index.end() || o == index.end())
      return ctx.error("node " + std::to_string(id[i]) + " of tree " + std::to_string(tree[i]) +
                       " has a missing child");
    t.yes = y->second;
    t.no = o->second;
  }
  std::vector<bool> child(n, false);
  for (const TreeNode& t : f->nodes)
    if (t.mode != Mode::kLeaf) child[t.yes] = child[t.no] = true;
  for (size_t i = 0; i < n; ++i)
    if (!child[i]) f->roots.push_back(static_cast<int64_t>(i));
  const std::vector<int64_t> wt = ints(prefix + "_treeids"), wn = ints(prefix + "_nodeids"),
                             wi = ints(prefix + "_ids");
  const std::vector<double> ww = floats_or_tensor(ctx, prefix + "_weights");
  if (wn.size() != wt.size() || wi.size() != wt.size() || ww.size() != wt.size())
    return ctx.error("the " + prefix + "_* attributes differ in length");
  for (size_t k = 0; k < wt.size(); ++k) {
    auto it = index.find({wt[k], wn[k]});
    if (it == index.end()) return ctx.error(prefix + " weight " + std::to_string(k) + " names no node");
    f->nodes[it->second].weights.emplace_back(wi[k], ww[k]);
  }
  return Status::ok();
}

const TreeNode& leaf_of(const Forest& f, int64_t root, const double* x, int64_t features) {
  const TreeNode* t = &f.nodes[root];
  for (size_t steps = 0; t->mode != Mode::kLeaf && steps <= f.nodes.size(); ++steps) {
    const double v = t->feature >= 0 && t->feature < features ? x[t->feature] : NAN;
    bool go;
    if (std::isnan(v)) {
      go = t->missing_goes_yes;
    } else {
      switch (t->mode) {
        case Mode::kLeq:
          go = v <= t->value;
          break;
        case Mode::kLt:
          go = v < t->value;
          break;
        case Mode::kGte:
          go = v >= t->value;
          break;
        case Mode::kGt:
          go = v > t->value;
          break;
        case Mode::kEq:
          go = v == t->value;
          break;
        default:
          go = v != t->value;
          break;
      }
    }
    t = &f.nodes[go ? t->yes : t->no];
  }
  return *t;
}

// Scores [N, width] by aggregate (SUM, AVERAGE, MIN, MAX) over the trees, plus base_values.
Status score_rows(const KernelContext& ctx, const Forest& f, const std::string& aggregate, int64_t width,
                  std::vector<double>* scores, int64_t* rows) {
  const Dims& d = dims_of(ctx.in(0));
  const int64_t C = d.empty() ? 1 : d.back();
  *rows = num_elements(d) / std::max<int64_t>(C, 1);
  const std::vector<double> x = to_doubles(ctx.in(0));
  const std::vector<double> base = floats_or_tensor(ctx, "base_values");
  scores->assign(static_cast<size_t>(*rows * width), 0.0);
  for (int64_t r = 0; r < *rows; ++r) {
    double* s = scores->data() + r * width;
    std::vector<bool> seen(static_cast<size_t>(width), false);
    for (int64_t root : f.roots) {
      for (const auto& [k, w] : leaf_of(f, root, x.data() + r * C, C).weights) {
        if (k < 0 || k >= width)
          return ctx.error("a leaf weight names target " + std::to_string(k) + " of " +
                           std::to_string(width));
        if (aggregate == "MIN")
          s[k] = seen[k] ? std::min(s[k], w) : w;
        else if (aggregate == "MAX")
          s[k] = seen[k] ? std::max(s[k], w) : w;
        else
          s[k] += w;
        seen[k] = true;
      }
    }
    for (int64_t k = 0; k < width; ++k) {
      if (aggregate == "AVERAGE") s[k] /= static_cast<double>(std::max<size_t>(f.roots.size(), 1));
      if (!base.empty()) s[k] += base[static_cast<size_t>(k) % base.size()];
    }
  }
  return Status::ok();
}

Status TreeEnsembleRegressor(KernelContext& ctx) {
  Forest f;
  GS_RETURN_IF_ERROR(build_forest(ctx, "target", &f));
  const int64_t targets = ctx.attr_int("n_targets", 1);
  const std::string aggregate = ctx.attr_string("aggregate_function", "SUM");
  if (aggregate != "SUM" && aggregate != "AVERAGE" && aggregate != "MIN" && aggregate != "MAX")
    return ctx.error("aggregate_function must be SUM, AVERAGE, MIN or MAX");
  if (ctx.attr_string("post_transform", "NONE") != "NONE")
    return ctx.unsupported("post_transform other than NONE is not supported");
  std::vector<double> s;
  int64_t rows = 0;
  GS_RETURN_IF_ERROR(score_rows(ctx, f, aggregate, targets, &s, &rows));
  return write_float_output(ctx, 0, DataType::kFloat, {rows, targets}, [&](int64_t i) { return s[i]; });
}

// Scores per class label (SUM of leaf weights plus base_values, then post_transform) and the label of the
// best. With two labels and weights for one class only, the score s is the second class's and the first is 1
// - s, as ONNX Runtime gives it; the label is the second when s > 0.5 (weights all positive) or s > 0.
Status TreeEnsembleClassifier(KernelContext& ctx) {
  Forest f;
  GS_RETURN_IF_ERROR(build_forest(ctx, "class", &f));
  int64_t labels = 0;
  const Tensor names = class_label_tensor(ctx, &labels);
  if (labels < 1) return ctx.error("classlabels_strings or classlabels_int64s is required");
  std::set<int64_t> used;
  bool positive = true;
  for (const TreeNode& t : f.nodes)
    for (const auto& [k, w] : t.weights) {
      used.insert(k);
      positive = positive && w >= 0;
    }
  const bool binary = labels == 2 && used.size() == 1;
  std::vector<double> s;
  int64_t rows = 0;
  GS_RETURN_IF_ERROR(score_rows(ctx, f, "SUM", binary ? 1 : labels, &s, &rows));
  std::vector<double> scores;
  std::vector<int64_t> best;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> row;
    if (binary) {
      const double v = s[r];
      best.push_back(v > (positive ? 0.5 : 0.0) ? 1 : 0);
      row = {1 - v, v};
    } else {
      row.assign(s.begin() + r * labels, s.begin() + (r + 1) * labels);
      best.push_back(std::max_element(row.begin(), row.end()) - row.begin());
    }
    GS_RETURN_IF_ERROR(ml_post_transform(ctx, row));
    scores.insert(scores.end(), row.begin(), row.end());
  }
  GS_RETURN_IF_ERROR(
      write_float_output(ctx, 1, DataType::kFloat, {rows, labels}, [&](int64_t i) { return scores[i]; }));
  return write_class_labels(ctx, names, best);
}

}  // namespace

void register_trees(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"ai.onnx.ml::TreeEnsembleClassifier", TreeEnsembleClassifier},
                       {"ai.onnx.ml::TreeEnsembleRegressor", TreeEnsembleRegressor}});
}

}  // namespace graphsplit::kernels
