// ai.onnx.ml operators: LabelEncoder, CategoryMapper, OneHotEncoder, Binarizer, Scaler, Normalizer, Imputer,
// ArrayFeatureExtractor, FeatureVectorizer, LinearRegressor, LinearClassifier and ZipMap (rows of scores as a
// sequence of maps from class label to score).
#include <algorithm>
#include <cmath>
#include <map>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

std::vector<std::string> strings_attr(const KernelContext& ctx, std::string_view key) {
  const sdk::AttrValue* v = ctx.node->attrs().get(key);
  return v && v->as_strings() ? *v->as_strings() : std::vector<std::string>{};
}

// A key or value list of LabelEncoder: from `<stem>_strings`, `<stem>_int64s`, `<stem>_floats` or (opset 4)
// `<stem>_tensor`, as text so that one map serves every type pair.
struct Column {
  DataType type = DataType::kUndefined;
  std::vector<std::string> text;
};

std::string as_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

Column column(const KernelContext& ctx, const std::string& stem) {
  Column c;
  if (auto s = strings_attr(ctx, stem + "_strings"); !s.empty()) {
    c.type = DataType::kString;
    c.text = s;
  } else if (auto i = ctx.attr_ints(stem + "_int64s")) {
    c.type = DataType::kInt64;
    for (int64_t v : *i) c.text.push_back(std::to_string(v));
  } else if (auto f = ctx.attr_floats(stem + "_floats")) {
    c.type = DataType::kFloat;
    for (float v : *f) c.text.push_back(as_text(v));
  } else if (const Tensor* t = ctx.attr_tensor(stem + "_tensor")) {
    c.type = t->desc().dtype;
    if (c.type == DataType::kString) {
      t->strings(&c.text);
    } else {
      for (double v : to_doubles(*t))
        c.text.push_back(c.type == DataType::kInt64 ? std::to_string(static_cast<int64_t>(v)) : as_text(v));
    }
  }
  return c;
}

// Input elements as text in the key column's spelling.
Status input_text(const KernelContext& ctx, DataType key_type, std::vector<std::string>* out) {
  const Tensor& x = ctx.in(0);
  if (dtype_of(x) == DataType::kString) return read_strings(ctx, 0, out);
  for (double v : to_doubles(x))
    out->push_back(key_type == DataType::kInt64 ||
                           (dtype_of(x) != DataType::kFloat && dtype_of(x) != DataType::kDouble)
                       ? std::to_string(static_cast<int64_t>(v))
                       : as_text(static_cast<float>(v)));
  return Status::ok();
}

Status write_values(KernelContext& ctx, DataType type, const Dims& dims,
                    const std::vector<std::string>& text) {
  if (type == DataType::kString) {
    set_strings(ctx, 0, dims, text);
    return Status::ok();
  }
  return visit_numeric(type, [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(0, type, dims);
    for (size_t i = 0; i < text.size(); ++i)
      out[i] = T(static_cast<Compute<T>>(std::strtod(text[i].c_str(), nullptr)));
    return Status::ok();
  });
}

Status LabelEncoder(KernelContext& ctx) {
  Column keys = column(ctx, "keys"), values = column(ctx, "values");
  if (keys.type == DataType::kUndefined && ctx.opset < 2) {  // opset 1: classes_strings <-> indices
    keys.type = DataType::kString;
    keys.text = strings_attr(ctx, "classes_strings");
    values.type = DataType::kInt64;
    for (size_t i = 0; i < keys.text.size(); ++i) values.text.push_back(std::to_string(i));
    if (dtype_of(ctx.in(0)) != DataType::kString) std::swap(keys, values);
  }
  if (keys.text.size() != values.text.size()) return ctx.error("keys and values differ in length");
  std::map<std::string, std::string> table;
  for (size_t i = 0; i < keys.text.size(); ++i) table.emplace(keys.text[i], values.text[i]);
  std::string fallback;
  if (values.type == DataType::kString)
    fallback = ctx.attr_string("default_string", "_Unused");
  else if (values.type == DataType::kInt64)
    fallback = std::to_string(ctx.attr_int("default_int64", -1));
  else
    fallback = as_text(ctx.attr_float("default_float", -0.0f));
  if (const Tensor* d = ctx.attr_tensor("default_tensor")) {
    std::vector<std::string> s;
    if (d->desc().dtype == DataType::kString && d->strings(&s) && !s.empty())
      fallback = s[0];
    else if (d->desc().dtype != DataType::kString)
      fallback = values.type == DataType::kInt64 ? std::to_string(to_int64s(*d).at(0))
                                                 : as_text(to_doubles(*d).at(0));
  }
  std::vector<std::string> in, out;
  GS_RETURN_IF_ERROR(input_text(ctx, keys.type, &in));
  for (const std::string& k : in) {
    auto it = table.find(k);
    out.push_back(it == table.end() ? fallback : it->second);
  }
  return write_values(ctx, values.type, dims_of(ctx.in(0)), out);
}

// int64 <-> string through cats_int64s / cats_strings.
Status CategoryMapper(KernelContext& ctx) {
  const std::vector<std::string> names = strings_attr(ctx, "cats_strings");
  const std::vector<int64_t> ids = ctx.attr_ints("cats_int64s").value_or(std::vector<int64_t>{});
  if (names.size() != ids.size()) return ctx.error("cats_strings and cats_int64s differ in length");
  if (dtype_of(ctx.in(0)) == DataType::kString) {
    std::map<std::string, int64_t> table;
    for (size_t i = 0; i < ids.size(); ++i) table.emplace(names[i], ids[i]);
    std::vector<std::string> in;
    GS_RETURN_IF_ERROR(read_strings(ctx, 0, &in));
    auto* out = ctx.allocate_as<int64_t>(0, DataType::kInt64, dims_of(ctx.in(0)));
    for (size_t i = 0; i < in.size(); ++i) {
      auto it = table.find(in[i]);
      out[i] = it == table.end() ? ctx.attr_int("default_int64", -1) : it->second;
    }
    return Status::ok();
  }
  std::map<int64_t, std::string> table;
  for (size_t i = 0; i < ids.size(); ++i) table.emplace(ids[i], names[i]);
  std::vector<std::string> out;
  for (int64_t v : to_int64s(ctx.in(0))) {
    auto it = table.find(v);
    out.push_back(it == table.end() ? ctx.attr_string("default_string", "_Unused") : it->second);
  }
  set_strings(ctx, 0, dims_of(ctx.in(0)), out);
  return Status::ok();
}

// One float column per category, appended as a last axis.
Status OneHotEncoder(KernelContext& ctx) {
  std::vector<std::string> cats = strings_attr(ctx, "cats_strings"), in;
  if (cats.empty())
    for (int64_t v : ctx.attr_ints("cats_int64s").value_or(std::vector<int64_t>{}))
      cats.push_back(std::to_string(v));
  GS_RETURN_IF_ERROR(input_text(ctx, DataType::kInt64, &in));
  std::map<std::string, int64_t> where;
  for (size_t i = 0; i < cats.size(); ++i) where.emplace(cats[i], static_cast<int64_t>(i));
  const bool zeros = ctx.attr_int("zeros", 1) != 0;
  Dims od = dims_of(ctx.in(0));
  od.push_back(static_cast<int64_t>(cats.size()));
  float* out = ctx.allocate_as<float>(0, DataType::kFloat, od);
  std::fill(out, out + num_elements(od), 0.0f);
  for (size_t i = 0; i < in.size(); ++i) {
    auto it = where.find(in[i]);
    if (it == where.end()) {
      if (!zeros) return ctx.error("category '" + in[i] + "' is not among the encoder's categories");
      continue;
    }
    out[static_cast<int64_t>(i) * static_cast<int64_t>(cats.size()) + it->second] = 1.0f;
  }
  return Status::ok();
}

Status Binarizer(KernelContext& ctx) {
  const double threshold = ctx.attr_float("threshold", 0.0f);
  const Tensor& x = ctx.in(0);
  return visit_numeric<false>(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* in = data_as<T>(x);
    T* out = ctx.allocate_as<T>(0, dtype_of(x), dims_of(x));
    for (int64_t i = 0, n = num_elements(dims_of(x)); i < n; ++i)
      out[i] = T(static_cast<C>(static_cast<double>(static_cast<C>(in[i])) > threshold ? 1 : 0));
    return Status::ok();
  });
}

// Per-feature (last axis) constants: one value for every feature, or one per feature.
double feature_value(const std::vector<float>& v, int64_t feature, double fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[static_cast<size_t>(feature) % v.size()];
}

Status Scaler(KernelContext& ctx) {
  const Dims& d = dims_of(ctx.in(0));
  const int64_t C = d.empty() ? 1 : d.back();
  const std::vector<float> offset = ctx.attr_floats("offset").value_or(std::vector<float>{});
  const std::vector<float> scale = ctx.attr_floats("scale").value_or(std::vector<float>{});
  const std::vector<double> v = to_doubles(ctx.in(0));
  float* out = ctx.allocate_as<float>(0, DataType::kFloat, d);
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t f = static_cast<int64_t>(i) % C;
    out[i] = static_cast<float>((v[i] - feature_value(offset, f, 0)) * feature_value(scale, f, 1));
  }
  return Status::ok();
}

// Each row (last axis) divided by its MAX, L1 or L2 norm.
Status Normalizer(KernelContext& ctx) {
  const Dims& d = dims_of(ctx.in(0));
  const std::string norm = ctx.attr_string("norm", "MAX");
  if (norm != "MAX" && norm != "L1" && norm != "L2")
    return ctx.error("norm must be MAX, L1 or L2, got '" + norm + "'");
  const int64_t C = d.empty() ? 1 : d.back();
  const std::vector<double> v = to_doubles(ctx.in(0));
  float* out = ctx.allocate_as<float>(0, DataType::kFloat, d);
  for (size_t r = 0; r * static_cast<size_t>(C) < v.size(); ++r) {
    const double* row = v.data() + r * C;
    double n = norm == "MAX" ? -INFINITY : 0;
    for (int64_t k = 0; k < C; ++k)
      n = norm == "MAX" ? std::max(n, row[k]) : n + (norm == "L1" ? std::abs(row[k]) : row[k] * row[k]);
    if (norm == "L2") n = std::sqrt(n);
    for (int64_t k = 0; k < C; ++k) out[r * C + k] = static_cast<float>(n == 0 ? row[k] : row[k] / n);
  }
  return Status::ok();
}

// Values equal to replaced_value (NaN matches NaN) become the imputed value of their feature.
Status Imputer(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const int64_t C = d.empty() ? 1 : d.back();
  const std::vector<double> v = to_doubles(x);
  std::vector<double> y(v.size());
  if (dtype_of(x) == DataType::kInt64 || dtype_of(x) == DataType::kInt32) {
    const std::vector<int64_t> imputed =
        ctx.attr_ints("imputed_value_int64s").value_or(std::vector<int64_t>{});
    const int64_t replaced = ctx.attr_int("replaced_value_int64", 0);
    if (imputed.empty()) return ctx.error("imputed_value_int64s is required for integer input");
    for (size_t i = 0; i < v.size(); ++i)
      y[i] = static_cast<int64_t>(v[i]) == replaced
                 ? static_cast<double>(imputed[imputed.size() == 1 ? 0 : i % C])
                 : v[i];
  } else {
    const std::vector<float> imputed = ctx.attr_floats("imputed_value_floats").value_or(std::vector<float>{});
    const double replaced = ctx.attr_float("replaced_value_float", 0.0f);
    if (imputed.empty()) return ctx.error("imputed_value_floats is required for float input");
    for (size_t i = 0; i < v.size(); ++i) {
      const bool match = std::isnan(replaced) ? std::isnan(v[i]) : v[i] == replaced;
      y[i] = match ? feature_value(imputed, static_cast<int64_t>(i) % C, 0) : v[i];
    }
  }
  return visit_numeric<false>(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(0, dtype_of(x), d);
    for (size_t i = 0; i < y.size(); ++i) out[i] = T(static_cast<Compute<T>>(y[i]));
    return Status::ok();
  });
}

// X[..., Y]: the features Y of the last axis (a 1-D X gives [1, len(Y)]).
Status ArrayFeatureExtractor(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (d.empty()) return ctx.error("the input must have rank >= 1");
  const std::vector<int64_t> idx = to_int64s(ctx.in(1));
  const int64_t C = d.back(), rows = num_elements(d) / std::max<int64_t>(C, 1);
  for (int64_t i : idx)
    if (i < 0 || i >= C)
      return ctx.error("index " + std::to_string(i) + " is out of range for " + std::to_string(C) +
                       " features");
  Dims od = d.size() == 1 ? Dims{1, static_cast<int64_t>(idx.size())} : d;
  od.back() = static_cast<int64_t>(idx.size());
  const int64_t es = sdk::element_size(dtype_of(x));
  if (es == 0) {
    std::vector<std::string> in, out;
    GS_RETURN_IF_ERROR(read_strings(ctx, 0, &in));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t i : idx) out.push_back(in[r * C + i]);
    set_strings(ctx, 0, od, out);
    return Status::ok();
  }
  char* out = ctx.allocate(0, dtype_of(x), od);
  for (int64_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < idx.size(); ++k)
      std::memcpy(out + (r * static_cast<int64_t>(idx.size()) + static_cast<int64_t>(k)) * es,
                  x.data() + (r * C + idx[k]) * es, static_cast<size_t>(es));
  return Status::ok();
}

// The inputs' rows concatenated, each input cut or zero-padded to its inputdimensions entry.
Status FeatureVectorizer(KernelContext& ctx) {
  const std::vector<int64_t> widths = ctx.attr_ints("inputdimensions").value_or(std::vector<int64_t>{});
  if (widths.size() != ctx.num_inputs()) return ctx.error("inputdimensions must give one width per input");
  const int64_t rows = dims_of(ctx.in(0)).size() > 1 ? dims_of(ctx.in(0))[0] : 1;
  int64_t total = 0;
  for (int64_t w : widths) total += w;
  float* out = ctx.allocate_as<float>(0, DataType::kFloat, {rows, total});
  std::fill(out, out + rows * total, 0.0f);
  int64_t at = 0;
  for (size_t k = 0; k < widths.size(); ++k) {
    const std::vector<double> v = to_doubles(ctx.in(k));
    const int64_t have = static_cast<int64_t>(v.size()) / std::max<int64_t>(rows, 1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < std::min(have, widths[k]); ++c)
        out[r * total + at + c] = static_cast<float>(v[r * have + c]);
    at += widths[k];
  }
  return Status::ok();
}

// X [N, C] times coefficients [targets, C] plus intercepts; post_transform NONE only.
Status LinearRegressor(KernelContext& ctx) {
  const Dims& d = dims_of(ctx.in(0));
  const int64_t C = d.empty() ? 1 : d.back(), N = num_elements(d) / std::max<int64_t>(C, 1);
  const int64_t targets = ctx.attr_int("targets", 1);
  const std::vector<float> w = ctx.attr_floats("coefficients").value_or(std::vector<float>{});
  const std::vector<float> b = ctx.attr_floats("intercepts").value_or(std::vector<float>{});
  if (ctx.attr_string("post_transform", "NONE") != "NONE")
    return ctx.unsupported("post_transform other than NONE is not supported");
  if (static_cast<int64_t>(w.size()) != targets * C)
    return ctx.error("coefficients must hold targets x features values");
  const std::vector<double> v = to_doubles(ctx.in(0));
  float* out = ctx.allocate_as<float>(0, DataType::kFloat, {N, targets});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t t = 0; t < targets; ++t) {
      double acc = b.empty() ? 0 : b[static_cast<size_t>(t) % b.size()];
      for (int64_t c = 0; c < C; ++c) acc += v[n * C + c] * w[t * C + c];
      out[n * targets + t] = static_cast<float>(acc);
    }
  return Status::ok();
}

// Class labels as a 1-D tensor: classlabels_strings, else classlabels_int64s (or classlabels_ints).
}  // namespace

Tensor class_label_tensor(const KernelContext& ctx, int64_t* count) {
  sdk::TensorDesc d;
  if (auto names = strings_attr(ctx, "classlabels_strings"); !names.empty()) {
    *count = static_cast<int64_t>(names.size());
    d.shape = sdk::Shape({*count});
    return Tensor::from_strings(d, names);
  }
  std::vector<int64_t> ids =
      ctx.attr_ints("classlabels_int64s")
          .value_or(ctx.attr_ints("classlabels_ints").value_or(std::vector<int64_t>{}));
  *count = static_cast<int64_t>(ids.size());
  d.dtype = DataType::kInt64;
  d.shape = sdk::Shape({*count});
  return Tensor(d, std::string(reinterpret_cast<const char*>(ids.data()), ids.size() * 8));
}

namespace {

Status ZipMap(KernelContext& ctx) {
  const Dims& d = dims_of(ctx.in(0));
  int64_t classes = 0;
  const Tensor keys = class_label_tensor(ctx, &classes);
  if (d.size() != 2 || d[1] != classes)
    return ctx.error("the input must be [N, " + std::to_string(classes) + "] (one score per class label)");
  const std::vector<double> v = to_doubles(ctx.in(0));
  std::vector<Tensor> rows;
  sdk::TensorDesc vd;
  vd.dtype = DataType::kFloat;
  vd.shape = sdk::Shape({classes});
  for (int64_t n = 0; n < d[0]; ++n) {
    std::vector<float> row(v.begin() + n * classes, v.begin() + (n + 1) * classes);
    std::string bytes(reinterpret_cast<const char*>(row.data()), row.size() * 4);
    rows.push_back(Tensor::map(keys, Tensor(vd, std::move(bytes))));
  }
  ctx.set_output(0, Tensor::sequence(DataType::kFloat, std::move(rows)));
  return Status::ok();
}

// erf^-1 by Newton's method from Giles' single-precision start; PROBIT is rare and never hot.
double inverse_erf(double x) {
  if (x <= -1) return -INFINITY;
  if (x >= 1) return INFINITY;
  const double w = -std::log((1 - x) * (1 + x));
  double y =
      w < 5 ? x * (1.50140941 + 0.246640727 * (w - 2.5)) : x * (2.83297682 + 1.00167406 * (std::sqrt(w) - 3));
  for (int k = 0; k < 4; ++k) y -= (std::erf(y) - x) / (2 / std::sqrt(M_PI) * std::exp(-y * y));
  return y;
}

}  // namespace

// ai.onnx.ml's post_transform of one row of scores.
Status ml_post_transform(const KernelContext& ctx, std::vector<double>& row) {
  const std::string t = ctx.attr_string("post_transform", "NONE");
  if (t == "NONE") return Status::ok();
  if (t == "LOGISTIC") {
    for (double& r : row) r = 1 / (1 + std::exp(-r));
  } else if (t == "SOFTMAX" || t == "SOFTMAX_ZERO") {
    const double top = *std::max_element(row.begin(), row.end());
    double sum = 0;
    for (double& r : row) sum += (r = (t == "SOFTMAX_ZERO" && r == 0) ? 0.0 : std::exp(r - top));
    for (double& r : row) r = sum > 0 ? r / sum : 0;
  } else if (t == "PROBIT") {
    for (double& r : row) r = std::sqrt(2.0) * inverse_erf(2 * r - 1);
  } else {
    return ctx.error("post_transform '" + t +
                     "' is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT");
  }
  return Status::ok();
}

// Y: each row's label (from the best score; for a binary classifier the second label when s > 0).
Status write_class_labels(KernelContext& ctx, const Tensor& names, const std::vector<int64_t>& best) {
  const auto N = static_cast<int64_t>(best.size());
  if (names.desc().dtype == DataType::kString) {
    std::vector<std::string> text, out;
    names.strings(&text);
    for (int64_t k : best) out.push_back(text[k]);
    set_strings(ctx, 0, {N}, out);
    return Status::ok();
  }
  auto* y = ctx.allocate_as<int64_t>(0, DataType::kInt64, {N});
  for (int64_t n = 0; n < N; ++n) y[n] = reinterpret_cast<const int64_t*>(names.data())[best[n]];
  return Status::ok();
}

namespace {

// X [N, C] against one coefficient row per class (scores Z [N, classes]). A single row with two labels is a
// binary classifier: ONNX Runtime scores it [1 - s, s] without the post transform, and so does this kernel
// (the specification does not say; skl2onnx writes two rows for binary classifiers anyway).
Status LinearClassifier(KernelContext& ctx) {
  const Dims& d = dims_of(ctx.in(0));
  const int64_t C = d.empty() ? 1 : d.back(), N = num_elements(d) / std::max<int64_t>(C, 1);
  const std::vector<float> w = ctx.attr_floats("coefficients").value_or(std::vector<float>{});
  const std::vector<float> b = ctx.attr_floats("intercepts").value_or(std::vector<float>{});
  int64_t labels = 0;
  const Tensor names = class_label_tensor(ctx, &labels);
  if (C < 1 || w.empty() || w.size() % static_cast<size_t>(C) != 0)
    return ctx.error("coefficients must hold classes x features values");
  const auto E = static_cast<int64_t>(w.size()) / C;
  const bool binary = E == 1 && labels == 2;
  if (!binary && E != labels)
    return ctx.error("coefficients give " + std::to_string(E) + " classes but there are " +
                     std::to_string(labels) + " labels");
  const std::vector<double> v = to_doubles(ctx.in(0));
  const int64_t cols = binary ? 2 : E;
  float* scores = ctx.allocate_as<float>(1, DataType::kFloat, {N, cols});
  std::vector<int64_t> best(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> row(static_cast<size_t>(E));
    for (int64_t e = 0; e < E; ++e) {
      row[e] = b.empty() ? 0 : b[static_cast<size_t>(e) % b.size()];
      for (int64_t c = 0; c < C; ++c) row[e] += v[n * C + c] * w[e * C + c];
    }
    best[n] = binary ? (row[0] > 0 ? 1 : 0) : std::max_element(row.begin(), row.end()) - row.begin();
    if (binary)
      row = {1 - row[0], row[0]};  // as ONNX Runtime scores it, whatever the post transform
    else
      GS_RETURN_IF_ERROR(ml_post_transform(ctx, row));
    for (int64_t k = 0; k < cols; ++k) scores[n * cols + k] = static_cast<float>(row[k]);
  }
  return write_class_labels(ctx, names, best);
}

// K(x, sv) for SVMRegressor's kernel_type with kernel_params [gamma, coef0, degree].
double svm_kernel(const std::string& type, const std::vector<float>& p, const double* x, const float* sv,
                  int64_t C) {
  const double gamma = p.size() > 0 ? p[0] : 0, coef0 = p.size() > 1 ? p[1] : 0,
               degree = p.size() > 2 ? p[2] : 0;
  double dot = 0, dist = 0;
  for (int64_t c = 0; c < C; ++c) {
    dot += x[c] * sv[c];
    dist += (x[c] - sv[c]) * (x[c] - sv[c]);
  }
  if (type == "POLY") return std::pow(gamma * dot + coef0, degree);
  if (type == "RBF") return std::exp(-gamma * dist);
  if (type == "SIGMOID") return std::tanh(gamma * dot + coef0);
  return dot;
}

// y = sum_j coefficients[j] K(x, sv_j) + rho, or (no support vectors) a linear model; one_class gives +-1.
Status SVMRegressor(KernelContext& ctx) {
  const Dims& d = dims_of(ctx.in(0));
  const int64_t C = d.empty() ? 1 : d.back(), N = num_elements(d) / std::max<int64_t>(C, 1);
  const std::string type = ctx.attr_string("kernel_type", "LINEAR");
  if (type != "LINEAR" && type != "POLY" && type != "RBF" && type != "SIGMOID")
    return ctx.error("kernel_type must be LINEAR, POLY, RBF or SIGMOID, got '" + type + "'");
  const std::vector<float> coef = ctx.attr_floats("coefficients").value_or(std::vector<float>{});
  const std::vector<float> sv = ctx.attr_floats("support_vectors").value_or(std::vector<float>{});
  const std::vector<float> params = ctx.attr_floats("kernel_params").value_or(std::vector<float>{});
  const std::vector<float> rho = ctx.attr_floats("rho").value_or(std::vector<float>{0.0f});
  const int64_t n_sv = ctx.attr_int("n_supports", 0);
  if (C < 1 || n_sv < 0 || static_cast<int64_t>(sv.size()) != n_sv * C ||
      static_cast<int64_t>(coef.size()) != (n_sv > 0 ? n_sv : C))
    return ctx.error(
        "support_vectors must be n_supports x features and coefficients one per support vector "
        "(or per feature without support vectors)");
  if (ctx.attr_string("post_transform", "NONE") != "NONE")
    return ctx.unsupported("post_transform other than NONE is not supported");
  const bool one_class = ctx.attr_int("one_class", 0) != 0;
  const std::vector<double> x = to_doubles(ctx.in(0));
  std::vector<double> y(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    double acc = rho.empty() ? 0 : rho[0];
    if (n_sv == 0) {
      for (int64_t c = 0; c < C; ++c) acc += x[n * C + c] * coef[c];
    } else {
      for (int64_t j = 0; j < n_sv; ++j)
        acc += coef[j] * svm_kernel(type, params, x.data() + n * C, sv.data() + j * C, C);
    }
    y[n] = one_class ? (acc > 0 ? 1.0 : -1.0) : acc;
  }
  return write_float_output(ctx, 0, DataType::kFloat, {N, 1}, [&](int64_t i) { return y[i]; });
}

}  // namespace

void register_ml(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"ai.onnx.ml::ArrayFeatureExtractor", ArrayFeatureExtractor},
                       {"ai.onnx.ml::Binarizer", Binarizer},
                       {"ai.onnx.ml::CategoryMapper", CategoryMapper},
                       {"ai.onnx.ml::FeatureVectorizer", FeatureVectorizer},
                       {"ai.onnx.ml::Imputer", Imputer},
                       {"ai.onnx.ml::LabelEncoder", LabelEncoder},
                       {"ai.onnx.ml::LinearClassifier", LinearClassifier},
                       {"ai.onnx.ml::LinearRegressor", LinearRegressor},
                       {"ai.onnx.ml::Normalizer", Normalizer},
                       {"ai.onnx.ml::OneHotEncoder", OneHotEncoder},
                       {"ai.onnx.ml::SVMRegressor", SVMRegressor},
                       {"ai.onnx.ml::Scaler", Scaler},
                       {"ai.onnx.ml::ZipMap", ZipMap}});
}

}  // namespace graphsplit::kernels
