// Operators without a family: TopK, NonZero, NonMaxSuppression, OneHot, EyeLike, Trilu, Einsum, Compress,
// ReverseSequence, MeanVarianceNormalization, the window functions, Unique and GE's MapIndex.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

Status TopK(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  int64_t axis = ctx.attr_int("axis", -1);
  if (!normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis out of range");
  if (ctx.opset >= 10 && num_elements(dims_of(ctx.in(1))) != 1) return ctx.error("k must hold one value");
  const int64_t k = ctx.opset < 10 ? ctx.attr_int("k", 0) : to_int64s(ctx.in(1)).at(0);
  if (k < 0 || k > d[axis]) return ctx.error("k = " + std::to_string(k) + " is out of range");
  const bool largest = ctx.attr_int("largest", 1) != 0, sorted = ctx.attr_int("sorted", 1) != 0;
  (void)sorted;  // always sorted: a valid order for sorted = 0 too
  int64_t outer = 1, inner = 1;
  split_at_axis(d, axis, &outer, &inner);
  Dims out = d;
  out[axis] = k;
  return visit_arith(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* px = data_as<T>(x);
    T* pv = ctx.allocate_as<T>(0, dtype_of(x), out);
    int64_t* pi = ctx.allocate_as<int64_t>(1, DataType::kInt64, out);
    std::vector<int64_t> order(static_cast<size_t>(d[axis]));
    for (int64_t r = 0; r < outer; ++r)
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return static_cast<C>(px[(r * d[axis] + j) * inner + i]); };
        std::iota(order.begin(), order.end(), 0);
        // Ties: the lower index first (ONNX).
        std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
          const C va = at(a), vb = at(b);
          if (va != vb) return largest ? va > vb : va < vb;
          return a < b;
        });
        for (int64_t j = 0; j < k; ++j) {
          pv[(r * k + j) * inner + i] = T(at(order[j]));
          pi[(r * k + j) * inner + i] = order[j];
        }
      }
    return Status::ok();
  });
}

Status NonZero(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const int64_t n = num_elements(d);
  std::vector<int64_t> hits;
  GS_RETURN_IF_ERROR(visit_numeric(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* p = data_as<T>(x);
    for (int64_t i = 0; i < n; ++i)
      if (static_cast<C>(p[i]) != C(0)) hits.push_back(i);
    return Status::ok();
  }));
  const auto rank = static_cast<int64_t>(d.size()), count = static_cast<int64_t>(hits.size());
  int64_t* o = ctx.allocate_as<int64_t>(0, DataType::kInt64, {rank, count});
  const Dims s = strides_of(d);
  for (int64_t j = 0; j < count; ++j) {
    int64_t rem = hits[j];
    for (int64_t a = 0; a < rank; ++a) {
      o[a * count + j] = rem / s[a];
      rem %= s[a];
    }
  }
  return Status::ok();
}

Status NonMaxSuppression(KernelContext& ctx) {
  const Tensor& boxes = ctx.in(0);
  const Tensor& scores = ctx.in(1);
  const Dims& bd = dims_of(boxes);
  const Dims& sd = dims_of(scores);
  if (bd.size() != 3 || sd.size() != 3 || bd[2] != 4 || bd[0] != sd[0] || bd[1] != sd[2])
    return ctx.error("boxes [B,N,4] and scores [B,C,N] do not match");
  const int64_t max_out = ctx.has_input(2) && num_elements(dims_of(ctx.in(2))) ? to_int64s(ctx.in(2))[0] : 0;
  const double iou_th =
      ctx.has_input(3) && num_elements(dims_of(ctx.in(3))) ? scalar_as_double(ctx.in(3)) : 0.0;
  const bool has_score_th = ctx.has_input(4) && num_elements(dims_of(ctx.in(4))) > 0;
  const double score_th = has_score_th ? scalar_as_double(ctx.in(4)) : 0.0;
  const bool center = ctx.attr_int("center_point_box", 0) != 0;
  const int64_t B = bd[0], N = bd[1], C = sd[1];
  std::vector<int64_t> selected;
  auto box = [&](int64_t b, int64_t i, double out[4]) {
    double v[4];
    for (int k = 0; k < 4; ++k) v[k] = scalar_as_double(boxes, static_cast<size_t>((b * N + i) * 4 + k));
    if (center) {
      out[0] = v[1] - v[3] / 2;
      out[1] = v[0] - v[2] / 2;
      out[2] = v[1] + v[3] / 2;
      out[3] = v[0] + v[2] / 2;
    } else {
      out[0] = std::min(v[0], v[2]);
      out[1] = std::min(v[1], v[3]);
      out[2] = std::max(v[0], v[2]);
      out[3] = std::max(v[1], v[3]);
    }
  };
  auto iou = [&](int64_t b, int64_t i, int64_t j) {
    double p[4], q[4];
    box(b, i, p);
    box(b, j, q);
    const double ih = std::max(0.0, std::min(p[2], q[2]) - std::max(p[0], q[0]));
    const double iw = std::max(0.0, std::min(p[3], q[3]) - std::max(p[1], q[1]));
    const double inter = ih * iw;
    const double uni = (p[2] - p[0]) * (p[3] - p[1]) + (q[2] - q[0]) * (q[3] - q[1]) - inter;
    return uni <= 0 ? 0.0 : inter / uni;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c) {
      std::vector<int64_t> cand;
      for (int64_t i = 0; i < N; ++i) {
        const double s = scalar_as_double(scores, static_cast<size_t>((b * C + c) * N + i));
        if (!has_score_th || s > score_th) cand.push_back(i);
      }
      std::stable_sort(cand.begin(), cand.end(), [&](int64_t i, int64_t j) {
        return scalar_as_double(scores, static_cast<size_t>((b * C + c) * N + i)) >
               scalar_as_double(scores, static_cast<size_t>((b * C + c) * N + j));
      });
      std::vector<int64_t> keep;
      for (int64_t i : cand) {
        if (static_cast<int64_t>(keep.size()) >= max_out) break;
        bool ok = true;
        for (int64_t j : keep)
          if (iou(b, i, j) > iou_th) {
            ok = false;
            break;
          }
        if (ok) keep.push_back(i);
      }
      for (int64_t i : keep) selected.insert(selected.end(), {b, c, i});
    }
  const auto n = static_cast<int64_t>(selected.size() / 3);
  int64_t* o = ctx.allocate_as<int64_t>(0, DataType::kInt64, {n, 3});
  std::copy(selected.begin(), selected.end(), o);
  return Status::ok();
}

Status OneHot(KernelContext& ctx) {
  const Tensor& indices = ctx.in(0);
  if (num_elements(dims_of(ctx.in(1))) != 1 || num_elements(dims_of(ctx.in(2))) != 2)
    return ctx.error("depth must be a scalar and values must hold two values");
  const int64_t depth = static_cast<int64_t>(scalar_as_double(ctx.in(1)));
  const Tensor& values = ctx.in(2);
  if (depth <= 0) return ctx.error("depth must be positive");
  Dims out = dims_of(indices);
  int64_t axis = ctx.attr_int("axis", -1);
  if (!normalize_axis(&axis, static_cast<int64_t>(out.size()) + 1)) return ctx.error("axis out of range");
  out.insert(out.begin() + axis, depth);
  const int64_t es = sdk::element_size(dtype_of(values));
  if (es == 0) return ctx.error("unsupported value type");
  std::vector<int64_t> idx;
  for (int64_t i = 0, n = num_elements(dims_of(indices)); i < n; ++i)
    idx.push_back(static_cast<int64_t>(scalar_as_double(indices, static_cast<size_t>(i))));
  int64_t outer = 1, inner = 1;
  split_at_axis(out, axis, &outer, &inner);
  char* o = ctx.allocate(0, dtype_of(values), out);
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t j = 0; j < depth; ++j)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t v = idx[r * inner + i];
        if (v < 0) v += depth;
        std::memcpy(o + ((r * depth + j) * inner + i) * es, values.data() + (v == j ? es : 0),
                    static_cast<size_t>(es));
      }
  return Status::ok();
}

Status EyeLike(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (d.size() != 2) return ctx.error("input must be 2-D");
  const DataType dt =
      ctx.node->attrs().has("dtype") ? static_cast<DataType>(ctx.attr_int("dtype", 1)) : dtype_of(x);
  const int64_t k = ctx.attr_int("k", 0);
  return visit_numeric(dt, [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    T* o = ctx.allocate_as<T>(0, dt, d);
    for (int64_t i = 0; i < d[0]; ++i)
      for (int64_t j = 0; j < d[1]; ++j) o[i * d[1] + j] = T(C(j - i == k ? 1 : 0));
    return Status::ok();
  });
}

Status Trilu(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  if (d.size() < 2) return ctx.error("input must have rank >= 2");
  const int64_t k = ctx.has_input(1) ? to_int64s(ctx.in(1))[0] : 0;
  const bool upper = ctx.attr_int("upper", 1) != 0;
  const int64_t es = sdk::element_size(dtype_of(x));
  if (es == 0) return ctx.error("unsupported data type");
  const int64_t rows = d[d.size() - 2], cols = d.back(),
                mats = num_elements(d) / std::max<int64_t>(1, rows * cols);
  char* o = ctx.allocate(0, dtype_of(x), d);
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t at = (m * rows + i) * cols + j;
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (keep)
          std::memcpy(o + at * es, x.data() + at * es, static_cast<size_t>(es));
        else
          std::memset(o + at * es, 0, static_cast<size_t>(es));
      }
  return Status::ok();
}

// "ij,jk" -> {"ij", "jk"}.
std::vector<std::string> einsum_terms(const std::string& lhs) {
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const auto comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) return terms;
    start = comma + 1;
  }
}

// Replaces "..." by letters the equation does not use, one per broadcast dimension, right-aligned across the
// terms as numpy does; an implicit output lists them first. `broadcast` receives those letters.
Status expand_ellipsis(const KernelContext& ctx, std::string* eq, std::string* broadcast) {
  if (eq->find("...") == std::string::npos) return Status::ok();
  std::string free_letters;
  for (char c : std::string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
    if (eq->find(c) == std::string::npos) free_letters += c;
  const auto arrow = eq->find("->");
  std::string lhs = eq->substr(0, arrow), out;
  std::vector<std::string> terms = einsum_terms(lhs);
  if (terms.size() != ctx.num_inputs()) return ctx.error("equation and inputs differ in count");
  size_t widest = 0;
  std::vector<size_t> spans(terms.size(), 0);
  for (size_t t = 0; t < terms.size(); ++t) {
    if (terms[t].find("...") == std::string::npos) continue;
    const size_t named = terms[t].size() - 3, rank = dims_of(ctx.in(t)).size();
    if (rank < named) return ctx.error("term '" + terms[t] + "' has more indices than its input's rank");
    spans[t] = rank - named;
    widest = std::max(widest, spans[t]);
  }
  if (widest > free_letters.size()) return ctx.error("too many broadcast dimensions");
  *broadcast = free_letters.substr(0, widest);
  std::string expanded;
  for (size_t t = 0; t < terms.size(); ++t) {
    const auto at = terms[t].find("...");
    if (at != std::string::npos) terms[t].replace(at, 3, broadcast->substr(widest - spans[t]));
    expanded += (t ? "," : "") + terms[t];
  }
  if (arrow != std::string::npos) {
    out = eq->substr(arrow + 2);
    if (const auto at = out.find("..."); at != std::string::npos) out.replace(at, 3, *broadcast);
  } else {
    std::map<char, int> count;
    for (const std::string& t : terms)
      for (char c : t) ++count[c];
    out = *broadcast;
    for (auto& [c, n] : count)
      if (n == 1 && broadcast->find(c) == std::string::npos) out += c;
  }
  *eq = expanded + "->" + out;
  return Status::ok();
}

// Einsum by direct summation over every index combination: fine for the small operands it is used on.
Status Einsum(KernelContext& ctx) {
  std::string eq = ctx.attr_string("equation"), broadcast;
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  GS_RETURN_IF_ERROR(expand_ellipsis(ctx, &eq, &broadcast));
  const auto arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow), rhs;
  std::vector<std::string> terms = einsum_terms(lhs);
  if (terms.size() != ctx.num_inputs()) return ctx.error("equation and inputs differ in count");
  for (size_t t = 0; t < terms.size(); ++t)
    if (dtype_of(ctx.in(t)) != dtype_of(ctx.in(0))) return ctx.error("inputs differ in type");
  std::map<char, int64_t> size;
  std::map<char, int> count;
  for (size_t t = 0; t < terms.size(); ++t) {
    const Dims& d = dims_of(ctx.in(t));
    if (terms[t].size() != d.size())
      return ctx.error("term '" + terms[t] + "' does not match its input rank");
    for (size_t i = 0; i < d.size(); ++i) {
      const char c = terms[t][i];
      const bool stretch =
          broadcast.find(c) != std::string::npos && size.count(c) && (size[c] == 1 || d[i] == 1);
      if (size.count(c) && size[c] != d[i] && !stretch)
        return ctx.error(std::string("dimension '") + c + "' differs");
      size[c] = size.count(c) ? std::max(size[c], d[i]) : d[i];
      ++count[c];
    }
  }
  if (arrow != std::string::npos) {
    rhs = eq.substr(arrow + 2);
  } else {
    for (auto& [c, n] : count)
      if (n == 1) rhs += c;
  }
  std::string letters;
  for (auto& [c, n] : size) letters += c;
  Dims out;
  for (char c : rhs) {
    if (!size.count(c)) return ctx.error(std::string("output index '") + c + "' is not an input index");
    out.push_back(size[c]);
  }
  return visit_arith(dtype_of(ctx.in(0)), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    std::vector<C> acc(static_cast<size_t>(num_elements(out)), C(0));
    std::map<char, size_t> pos;
    for (size_t i = 0; i < letters.size(); ++i) pos[letters[i]] = i;
    Dims full(letters.size());
    for (size_t i = 0; i < letters.size(); ++i) full[i] = size[letters[i]];
    const int64_t total = num_elements(full);
    Dims idx(full.size(), 0);
    std::vector<Dims> st;
    for (size_t t = 0; t < terms.size(); ++t) {
      st.push_back(strides_of(dims_of(ctx.in(t))));
      for (size_t i = 0; i < terms[t].size(); ++i)  // a broadcast dimension of 1 repeats its one element
        if (dims_of(ctx.in(t))[i] == 1) st[t][i] = 0;
    }
    const Dims os = strides_of(out);
    for (int64_t it = 0; it < total; ++it) {
      C prod = C(1);
      for (size_t t = 0; t < terms.size(); ++t) {
        int64_t at = 0;
        for (size_t i = 0; i < terms[t].size(); ++i) at += idx[pos[terms[t][i]]] * st[t][i];
        prod = prod * static_cast<C>(data_as<T>(ctx.in(t))[at]);
      }
      int64_t o = 0;
      for (size_t i = 0; i < rhs.size(); ++i) o += idx[pos[rhs[i]]] * os[i];
      acc[o] += prod;
      for (size_t a = full.size(); a-- > 0;) {
        if (++idx[a] < full[a]) break;
        idx[a] = 0;
      }
    }
    T* po = ctx.allocate_as<T>(0, dtype_of(ctx.in(0)), out);
    for (size_t i = 0; i < acc.size(); ++i) po[i] = T(acc[i]);
    return Status::ok();
  });
}

// GE's MapIndex: the row of the gear table equal to the actual shape dims, or an error listing the gears.
Status MapIndex(KernelContext& ctx) {
  std::vector<int64_t> x = to_int64s(ctx.in(0));
  const Tensor& table = ctx.in(1);
  const Dims& td = dims_of(table);
  std::vector<int64_t> all = to_int64s(table);
  const int64_t rows = td.size() == 2 ? td[0] : 0, len = td.size() == 2 ? td[1] : 0;
  for (int64_t r = 0; r < rows; ++r) {
    if (len == static_cast<int64_t>(x.size()) && std::equal(x.begin(), x.end(), all.begin() + r * len)) {
      *ctx.allocate_as<int32_t>(0, DataType::kInt32, {}) = static_cast<int32_t>(r);
      return Status::ok();
    }
  }
  std::string gears;
  for (int64_t r = 0; r < rows; ++r)
    gears += (r ? " " : "") + dims_string(Dims(all.begin() + r * len, all.begin() + (r + 1) * len));
  return ctx.error("the input shape dims " + dims_string(x) + " match no gear; the model was compiled for " +
                   gears);
}

Status Compress(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const int64_t es = sdk::element_size(dtype_of(x));
  if (es == 0) return ctx.unsupported("data type is not supported");
  const bool* cond = data_as<bool>(ctx.in(1));
  const int64_t nc = num_elements(dims_of(ctx.in(1)));
  const sdk::AttrValue* axis_attr = ctx.node->attrs().get("axis");
  if (!axis_attr) {  // flattened
    std::vector<int64_t> keep;
    for (int64_t i = 0; i < std::min(nc, num_elements(d)); ++i)
      if (cond[i]) keep.push_back(i);
    char* o = ctx.allocate(0, dtype_of(x), {static_cast<int64_t>(keep.size())});
    for (size_t k = 0; k < keep.size(); ++k)
      std::memcpy(o + k * es, x.data() + keep[k] * es, static_cast<size_t>(es));
    return Status::ok();
  }
  int64_t axis = ctx.attr_int("axis", 0);
  if (!normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis out of range");
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < std::min(nc, d[axis]); ++i)
    if (cond[i]) keep.push_back(i);
  int64_t outer = 1, inner = 1;
  split_at_axis(d, axis, &outer, &inner);
  Dims out = d;
  out[axis] = static_cast<int64_t>(keep.size());
  char* o = ctx.allocate(0, dtype_of(x), out);
  const int64_t n = out[axis];
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t k = 0; k < n; ++k)
      std::memcpy(o + (r * n + k) * inner * es, x.data() + (r * d[axis] + keep[k]) * inner * es,
                  static_cast<size_t>(inner * es));
  return Status::ok();
}

Status ReverseSequence(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const int64_t es = sdk::element_size(dtype_of(x));
  if (es == 0 || d.size() < 2) return ctx.error("needs a tensor of rank >= 2 with a fixed-size type");
  const int64_t batch_axis = ctx.attr_int("batch_axis", 1), time_axis = ctx.attr_int("time_axis", 0);
  if ((batch_axis != 0 && batch_axis != 1) || (time_axis != 0 && time_axis != 1) || batch_axis == time_axis)
    return ctx.error("batch_axis and time_axis must be 0 and 1");
  std::vector<int64_t> lens = to_int64s(ctx.in(1));
  if (static_cast<int64_t>(lens.size()) != d[batch_axis])
    return ctx.error("sequence_lens has the wrong length");
  int64_t inner = 1;
  for (size_t a = 2; a < d.size(); ++a) inner *= d[a];
  char* o = ctx.allocate(0, dtype_of(x), d);
  std::memcpy(o, x.data(), x.size_bytes());
  for (int64_t b = 0; b < d[batch_axis]; ++b) {
    const int64_t len = std::clamp<int64_t>(lens[b], 0, d[time_axis]);
    for (int64_t t = 0; t < len; ++t) {
      auto at = [&](int64_t tt) {
        return time_axis == 0 ? (tt * d[1] + b) * inner : (b * d[1] + tt) * inner;
      };
      std::memcpy(o + at(t) * es, x.data() + at(len - 1 - t) * es, static_cast<size_t>(inner * es));
    }
  }
  return Status::ok();
}

Status MeanVarianceNormalization(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  std::vector<int64_t> axes = ctx.attr_ints("axes").value_or(std::vector<int64_t>{0, 2, 3});
  std::vector<bool> reduced(d.size(), false);
  for (int64_t a : axes) {
    if (!normalize_axis(&a, static_cast<int64_t>(d.size()))) return ctx.error("axis out of range");
    reduced[a] = true;
  }
  return visit_float(dtype_of(x), [&](auto tag) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* in = data_as<T>(x);
    const int64_t n = num_elements(d);
    Dims group_dims(d.size());
    for (size_t a = 0; a < d.size(); ++a) group_dims[a] = reduced[a] ? 1 : d[a];
    const Dims gs = strides_of(group_dims), xs = strides_of(d);
    auto group_of = [&](int64_t i) {
      int64_t g = 0;
      for (size_t a = 0; a < d.size(); ++a) g += reduced[a] ? 0 : ((i / xs[a]) % d[a]) * gs[a];
      return g;
    };
    const int64_t groups = num_elements(group_dims), per = groups ? n / groups : 0;
    std::vector<double> mean(static_cast<size_t>(groups), 0.0), sq(static_cast<size_t>(groups), 0.0);
    for (int64_t i = 0; i < n; ++i) {
      const double v = static_cast<double>(static_cast<C>(in[i]));
      mean[group_of(i)] += v;
      sq[group_of(i)] += v * v;
    }
    T* out = ctx.allocate_as<T>(0, dtype_of(x), d);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t g = group_of(i);
      const double m = mean[g] / static_cast<double>(per), var = sq[g] / static_cast<double>(per) - m * m;
      out[i] = T(static_cast<C>((static_cast<double>(static_cast<C>(in[i])) - m) / (std::sqrt(var) + 1e-9)));
    }
    return Status::ok();
  });
}

// Per-tensor or per-axis scale and zero point, as QuantizeLinear/DequantizeLinear define them.
Status linear_quant(KernelContext& ctx, bool quantize) {
  const Tensor& x = ctx.in(0);
  const Tensor& scale = ctx.in(1);
  const Dims& d = dims_of(x);
  const int64_t ns = num_elements(dims_of(scale));
  int64_t axis = ctx.attr_int("axis", 1);
  if (ns > 1 && !normalize_axis(&axis, static_cast<int64_t>(d.size()))) return ctx.error("axis out of range");
  if (ns == 0 || (ns > 1 && ns != d[axis])) return ctx.error("the scale needs one value or one per channel");
  if (ctx.has_input(2) && num_elements(dims_of(ctx.in(2))) > 0 && num_elements(dims_of(ctx.in(2))) != ns)
    return ctx.error("the zero point must match the scale");
  int64_t inner = 1;
  if (ns > 1)
    for (size_t a = axis + 1; a < d.size(); ++a) inner *= d[a];
  auto channel = [&](int64_t i) { return ns > 1 ? (i / inner) % d[axis] : 0; };
  const bool has_zp = ctx.has_input(2) && num_elements(dims_of(ctx.in(2))) > 0;
  const DataType qtype = has_zp ? dtype_of(ctx.in(2)) : (quantize ? DataType::kUint8 : dtype_of(x));
  const int64_t n = num_elements(d);
  if (quantize) {
    if (qtype != DataType::kUint8 && qtype != DataType::kInt8)
      return ctx.unsupported("only int8/uint8 quantisation");
    const double lo = qtype == DataType::kUint8 ? 0 : -128, hi = qtype == DataType::kUint8 ? 255 : 127;
    char* o = ctx.allocate(0, qtype, d);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = channel(i);
      const double zp = has_zp ? scalar_as_double(ctx.in(2), static_cast<size_t>(c)) : 0.0;
      // In float, as ONNX's reference divides: double division rounds some halves differently.
      const float ratio = static_cast<float>(scalar_as_double(x, static_cast<size_t>(i))) /
                          static_cast<float>(scalar_as_double(scale, static_cast<size_t>(c)));
      const double q = std::clamp(static_cast<double>(std::nearbyint(ratio)) + zp, lo, hi);
      if (qtype == DataType::kUint8)
        reinterpret_cast<uint8_t*>(o)[i] = static_cast<uint8_t>(q);
      else
        reinterpret_cast<int8_t*>(o)[i] = static_cast<int8_t>(q);
    }
    return Status::ok();
  }
  return visit_float(dtype_of(scale), [&](auto tag) {
    using T = decltype(tag);
    T* o = ctx.allocate_as<T>(0, dtype_of(scale), d);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = channel(i);
      const double zp = has_zp ? scalar_as_double(ctx.in(2), static_cast<size_t>(c)) : 0.0;
      o[i] = T(static_cast<Compute<T>>((scalar_as_double(x, static_cast<size_t>(i)) - zp) *
                                       scalar_as_double(scale, static_cast<size_t>(c))));
    }
    return Status::ok();
  });
}
Status QuantizeLinear(KernelContext& ctx) {
  return linear_quant(ctx, true);
}
Status DequantizeLinear(KernelContext& ctx) {
  return linear_quant(ctx, false);
}

// Hann, Hamming and Blackman windows (opset 17).
Status window(KernelContext& ctx, const double a[3]) {
  const int64_t size = static_cast<int64_t>(scalar_as_double(ctx.in(0)));
  if (size < 0) return ctx.error("negative window size");
  const bool periodic = ctx.attr_int("periodic", 1) != 0;
  const DataType dt = static_cast<DataType>(ctx.attr_int("output_datatype", 1));
  const double n = periodic ? static_cast<double>(size) : static_cast<double>(size - 1);
  return visit_numeric(dt, [&](auto tag) {
    using T = decltype(tag);
    T* o = ctx.allocate_as<T>(0, dt, {size});
    for (int64_t i = 0; i < size; ++i) {
      const double t = 2 * M_PI * static_cast<double>(i) / n;
      o[i] = T(static_cast<Compute<T>>(a[0] - a[1] * std::cos(t) + a[2] * std::cos(2 * t)));
    }
    return Status::ok();
  });
}
Status HannWindow(KernelContext& ctx) {
  static const double a[3] = {0.5, 0.5, 0.0};
  return window(ctx, a);
}
Status HammingWindow(KernelContext& ctx) {
  static const double a[3] = {25.0 / 46.0, 21.0 / 46.0, 0.0};
  return window(ctx, a);
}
Status BlackmanWindow(KernelContext& ctx) {
  static const double a[3] = {0.42, 0.5, 0.08};
  return window(ctx, a);
}

// Unique: distinct elements (flattened) or slices along `axis`, sorted or in order of first occurrence, with
// first-occurrence indices, inverse indices and counts.
Status Unique(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& d = dims_of(x);
  const int64_t es = sdk::element_size(dtype_of(x));
  if (es == 0) return ctx.unsupported("data type is not supported");
  const bool sorted = ctx.attr_int("sorted", 1) != 0;
  const bool has_axis = ctx.node->attrs().has("axis");
  int64_t axis = ctx.attr_int("axis", 0);
  Dims shape = has_axis ? d : Dims{num_elements(d)};
  if (has_axis && !normalize_axis(&axis, static_cast<int64_t>(d.size())))
    return ctx.error("axis out of range");
  if (!has_axis) axis = 0;
  const int64_t n = shape[axis];
  int64_t outer = 1, inner = 1;
  split_at_axis(shape, axis, &outer, &inner);
  // Slice k as doubles (for ordering) and as bytes (for equality).
  const std::vector<double> v = to_doubles(x);
  auto slice_less = [&](int64_t a, int64_t b) {
    for (int64_t r = 0; r < outer; ++r)
      for (int64_t i = 0; i < inner; ++i) {
        const double va = v[(r * n + a) * inner + i], vb = v[(r * n + b) * inner + i];
        if (va != vb) return va < vb;
      }
    return false;
  };
  auto slice_equal = [&](int64_t a, int64_t b) { return !slice_less(a, b) && !slice_less(b, a); };
  std::vector<int64_t> firsts;  // first occurrence of each distinct slice, in order of appearance
  std::vector<int64_t> inverse(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    auto it = std::find_if(firsts.begin(), firsts.end(), [&](int64_t f) { return slice_equal(f, k); });
    if (it == firsts.end()) {
      inverse[k] = static_cast<int64_t>(firsts.size());
      firsts.push_back(k);
    } else {
      inverse[k] = it - firsts.begin();
    }
  }
  std::vector<int64_t> order(firsts.size());
  std::iota(order.begin(), order.end(), 0);
  if (sorted)
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return slice_less(firsts[a], firsts[b]); });
  std::vector<int64_t> rank(order.size());
  for (size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<int64_t>(r);
  const auto u = static_cast<int64_t>(firsts.size());
  Dims out = shape;
  out[axis] = u;
  char* y = ctx.allocate(0, dtype_of(x), out);
  for (int64_t r = 0; r < outer; ++r)
    for (int64_t j = 0; j < u; ++j)
      std::memcpy(y + (r * u + j) * inner * es, x.data() + (r * n + firsts[order[j]]) * inner * es,
                  static_cast<size_t>(inner * es));
  if (ctx.num_outputs() > 1) {
    int64_t* o = ctx.allocate_as<int64_t>(1, DataType::kInt64, {u});
    for (int64_t j = 0; j < u; ++j) o[j] = firsts[order[j]];
  }
  if (ctx.num_outputs() > 2) {
    int64_t* o = ctx.allocate_as<int64_t>(2, DataType::kInt64, {n});
    for (int64_t k = 0; k < n; ++k) o[k] = rank[inverse[k]];
  }
  if (ctx.num_outputs() > 3) {
    int64_t* o = ctx.allocate_as<int64_t>(3, DataType::kInt64, {u});
    std::fill(o, o + u, 0);
    for (int64_t k = 0; k < n; ++k) ++o[rank[inverse[k]]];
  }
  return Status::ok();
}

}  // namespace

void register_misc(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {
                          {"BlackmanWindow", BlackmanWindow},
                          {"Compress", Compress},
                          {"DequantizeLinear", DequantizeLinear},
                          {"Einsum", Einsum},
                          {"HammingWindow", HammingWindow},
                          {"HannWindow", HannWindow},
                          {"MeanVarianceNormalization", MeanVarianceNormalization},
                          {"QuantizeLinear", QuantizeLinear},
                          {"ReverseSequence", ReverseSequence},
                          {"EyeLike", EyeLike},
                          {"NonMaxSuppression", NonMaxSuppression},
                          {"NonZero", NonZero},
                          {"OneHot", OneHot},
                          {"TopK", TopK},
                          {"Unique", Unique},
                          {"Trilu", Trilu},
                          {"graphsplit::MapIndex", MapIndex},
                      });
}

}  // namespace graphsplit::kernels
