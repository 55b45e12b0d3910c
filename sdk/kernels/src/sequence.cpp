// Sequence and optional operators. Their values are sdk::Tensor containers (Tensor::sequence/optional):
// immutable and shared, so inserting into a sequence copies element handles, never element bytes.
#include <algorithm>
#include <cstring>

#include "kernel.h"

namespace graphsplit::kernels {
namespace {

using sdk::ValueKind;

Status need_kind(const KernelContext& ctx, size_t i, ValueKind kind) {
  const Tensor& t = ctx.in(i);
  const bool ok = kind == ValueKind::kTensor ? !t.is_container() : t.is_container() && t.desc().kind == kind;
  if (ok) return Status::ok();
  const std::string got = t.is_container() ? std::string(sdk::to_string(t.desc().kind)) : "tensor";
  return ctx.error("input " + std::to_string(i) + " must be a " + std::string(sdk::to_string(kind)) +
                   ", got a " + got);
}

// A position input (int32 or int64 scalar) checked against [-n, n) or, for insertion, [-n, n].
Status position(const KernelContext& ctx, size_t input, int64_t n, bool inclusive_end, int64_t fallback,
                int64_t* out) {
  int64_t p = fallback;
  if (ctx.has_input(input)) {
    const Tensor& t = ctx.in(input);
    if (num_elements(dims_of(t)) != 1 || (dtype_of(t) != DataType::kInt32 && dtype_of(t) != DataType::kInt64))
      return ctx.error("the position must be an int32 or int64 scalar");
    p = to_int64s(t)[0];
  }
  const int64_t hi = inclusive_end ? n : n - 1;
  if (p < -n || p > hi)
    return ctx.error("position " + std::to_string(p) + " is out of range for a sequence of " +
                     std::to_string(n) + " elements");
  *out = p < 0 ? p + n : p;
  return Status::ok();
}

DataType dtype_attr(const KernelContext& ctx, DataType fallback) {
  return static_cast<DataType>(ctx.attr_int("dtype", static_cast<int64_t>(fallback)));
}

Status SequenceEmpty(KernelContext& ctx) {
  ctx.set_output(0, Tensor::sequence(dtype_attr(ctx, DataType::kFloat), {}));
  return Status::ok();
}

Status SequenceConstruct(KernelContext& ctx) {
  std::vector<Tensor> items;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    GS_RETURN_IF_ERROR(need_kind(ctx, i, ValueKind::kTensor));
    if (dtype_of(ctx.in(i)) != dtype_of(ctx.in(0)))
      return ctx.error("the elements must have one type: input " + std::to_string(i) + " is " +
                       std::string(sdk::to_string(dtype_of(ctx.in(i)))));
    items.push_back(ctx.in(i));
  }
  ctx.set_output(0,
                 Tensor::sequence(items.empty() ? DataType::kFloat : dtype_of(items[0]), std::move(items)));
  return Status::ok();
}

Status SequenceAt(KernelContext& ctx) {
  GS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::kSequence));
  const auto& items = ctx.in(0).elements();
  int64_t p = 0;
  GS_RETURN_IF_ERROR(position(ctx, 1, static_cast<int64_t>(items.size()), false, 0, &p));
  ctx.set_output(0, items[p]);
  return Status::ok();
}

Status SequenceInsert(KernelContext& ctx) {
  GS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::kSequence));
  GS_RETURN_IF_ERROR(need_kind(ctx, 1, ValueKind::kTensor));
  const Tensor& seq = ctx.in(0);
  if (!seq.elements().empty() && dtype_of(ctx.in(1)) != seq.desc().dtype)
    return ctx.error("inserting a " + std::string(sdk::to_string(dtype_of(ctx.in(1)))) +
                     " tensor into a sequence of " + std::string(sdk::to_string(seq.desc().dtype)));
  std::vector<Tensor> items = seq.elements();
  const auto n = static_cast<int64_t>(items.size());
  int64_t p = 0;
  GS_RETURN_IF_ERROR(position(ctx, 2, n, true, n, &p));
  items.insert(items.begin() + p, ctx.in(1));
  ctx.set_output(0, Tensor::sequence(dtype_of(ctx.in(1)), std::move(items)));
  return Status::ok();
}

Status SequenceErase(KernelContext& ctx) {
  GS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::kSequence));
  std::vector<Tensor> items = ctx.in(0).elements();
  int64_t p = 0;
  GS_RETURN_IF_ERROR(position(ctx, 1, static_cast<int64_t>(items.size()), false, -1, &p));
  items.erase(items.begin() + p);
  ctx.set_output(0, Tensor::sequence(ctx.in(0).desc().dtype, std::move(items)));
  return Status::ok();
}

Status SequenceLength(KernelContext& ctx) {
  GS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::kSequence));
  *ctx.allocate_as<int64_t>(0, DataType::kInt64, {}) = static_cast<int64_t>(ctx.in(0).elements().size());
  return Status::ok();
}

// Copies rows [begin, end) of `x` along `axis` (seen as [outer, dims[axis], inner]) into a new tensor.
Tensor slice_rows(const Tensor& x, int64_t axis, int64_t begin, int64_t end, bool keep_axis) {
  Dims dims = dims_of(x);
  int64_t outer = 0, inner = 0;
  split_at_axis(dims, axis, &outer, &inner);
  const int64_t es = sdk::element_size(dtype_of(x));
  const int64_t len = dims[axis], rows = end - begin;
  if (keep_axis)
    dims[axis] = rows;
  else
    dims.erase(dims.begin() + axis);
  sdk::TensorDesc desc;
  desc.dtype = dtype_of(x);
  desc.shape = sdk::Shape(dims);
  char* out = nullptr;
  Tensor t = Tensor::allocate(desc, static_cast<size_t>(outer * rows * inner * es), &out);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out + o * rows * inner * es, x.data() + (o * len + begin) * inner * es,
                static_cast<size_t>(rows * inner * es));
  return t;
}

// Chunk lengths along the axis: from `split` (a scalar chunk size, the last chunk shorter, or one length per
// chunk) or, without it, one per element.
Status split_lengths(const KernelContext& ctx, int64_t len, std::vector<int64_t>* lengths) {
  if (!ctx.has_input(1)) {
    lengths->assign(static_cast<size_t>(len), 1);
    return Status::ok();
  }
  const Tensor& s = ctx.in(1);
  const std::vector<int64_t> v = to_int64s(s);
  if (dims_of(s).empty()) {
    if (v.empty() || v[0] <= 0) return ctx.error("the split size must be positive");
    for (int64_t at = 0; at < len; at += v[0]) lengths->push_back(std::min(v[0], len - at));
    return Status::ok();
  }
  int64_t sum = 0;
  for (int64_t l : v) {
    if (l < 0) return ctx.error("split lengths must not be negative");
    sum += l;
  }
  if (sum != len)
    return ctx.error("split lengths sum to " + std::to_string(sum) + " but the axis has " +
                     std::to_string(len) + " elements");
  *lengths = v;
  return Status::ok();
}

Status SplitToSequence(KernelContext& ctx) {
  GS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::kTensor));
  const Tensor& x = ctx.in(0);
  if (sdk::element_size(dtype_of(x)) == 0) return ctx.unsupported("string tensors are not supported");
  int64_t axis = ctx.attr_int("axis", 0);
  if (!normalize_axis(&axis, static_cast<int64_t>(dims_of(x).size())))
    return ctx.error("axis is out of range for rank " + std::to_string(dims_of(x).size()));
  std::vector<int64_t> lengths;
  GS_RETURN_IF_ERROR(split_lengths(ctx, dims_of(x)[axis], &lengths));
  const bool keep = ctx.has_input(1) || ctx.attr_int("keepdims", 1) != 0;
  std::vector<Tensor> items;
  int64_t at = 0;
  for (int64_t l : lengths) {
    items.push_back(slice_rows(x, axis, at, at + l, keep));
    at += l;
  }
  ctx.set_output(0, Tensor::sequence(dtype_of(x), std::move(items)));
  return Status::ok();
}

// Every element's shape with the concatenation axis taken out must agree.
Status concat_dims(const KernelContext& ctx, const std::vector<Tensor>& items, int64_t axis, bool new_axis,
                   Dims* out) {
  Dims first = dims_of(items[0]);
  for (const Tensor& t : items) {
    Dims d = dims_of(t);
    if (d.size() != first.size() || dtype_of(t) != dtype_of(items[0]))
      return ctx.error("the sequence's elements differ in type or rank");
    for (size_t k = 0; k < d.size(); ++k)
      if (d[k] != first[k] && (new_axis || static_cast<int64_t>(k) != axis))
        return ctx.error("element shapes " + dims_string(first) + " and " + dims_string(d) +
                         " cannot be concatenated");
  }
  *out = first;
  if (new_axis) {
    out->insert(out->begin() + axis, static_cast<int64_t>(items.size()));
  } else {
    (*out)[axis] = 0;
    for (const Tensor& t : items) (*out)[axis] += dims_of(t)[axis];
  }
  return Status::ok();
}

Status ConcatFromSequence(KernelContext& ctx) {
  GS_RETURN_IF_ERROR(need_kind(ctx, 0, ValueKind::kSequence));
  const auto& items = ctx.in(0).elements();
  if (items.empty()) return ctx.error("cannot concatenate an empty sequence");
  const DataType dtype = dtype_of(items[0]);
  if (sdk::element_size(dtype) == 0) return ctx.unsupported("string tensors are not supported");
  const bool new_axis = ctx.attr_int("new_axis", 0) != 0;
  const auto rank = static_cast<int64_t>(dims_of(items[0]).size()) + (new_axis ? 1 : 0);
  int64_t axis = ctx.attr_int("axis", 0);
  if (!normalize_axis(&axis, rank)) return ctx.error("axis is out of range for rank " + std::to_string(rank));
  Dims dims;
  GS_RETURN_IF_ERROR(concat_dims(ctx, items, axis, new_axis, &dims));
  int64_t outer = 0, inner = 0;
  split_at_axis(dims, axis, &outer, &inner);
  const int64_t es = sdk::element_size(dtype);
  char* out = ctx.allocate(0, dtype, dims);
  int64_t at = 0;  // rows written so far along the axis
  for (const Tensor& t : items) {
    const int64_t rows = new_axis ? 1 : dims_of(t)[axis];
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(out + (o * dims[axis] + at) * inner * es, t.data() + o * rows * inner * es,
                  static_cast<size_t>(rows * inner * es));
    at += rows;
  }
  return Status::ok();
}

// The `type` attribute of Optional ("optional(seq(tensor(float)))" in ONNX's type syntax) as the element's
// kind and innermost type.
void parse_optional_type(const KernelContext& ctx, ValueKind* kind, DataType* dtype) {
  *kind = ValueKind::kTensor;
  *dtype = DataType::kFloat;
  const sdk::AttrValue* v = ctx.node->attrs().get("type");
  if (!v || v->kind() != sdk::AttrValue::Kind::kType) return;
  const std::string& text = std::get<sdk::TypeRef>(v->storage()).text;
  if (text.rfind("seq(", 0) == 0) *kind = ValueKind::kSequence;
  const auto open = text.rfind("tensor(");
  if (open == std::string::npos) return;
  const auto begin = open + 7, end = text.find(')', begin);
  if (auto t = sdk::parse_data_type(text.substr(begin, end - begin))) *dtype = *t;
}

Status Optional(KernelContext& ctx) {
  if (ctx.has_input(0)) {
    const Tensor& x = ctx.in(0);
    if (x.is_container() && x.desc().kind == ValueKind::kOptional)
      return ctx.error("the input is already an optional");
    const ValueKind kind = x.is_container() ? ValueKind::kSequence : ValueKind::kTensor;
    ctx.set_output(0, Tensor::optional(kind, x.desc().dtype, &x));
    return Status::ok();
  }
  ValueKind kind;
  DataType dtype;
  parse_optional_type(ctx, &kind, &dtype);
  ctx.set_output(0, Tensor::optional(kind, dtype, nullptr));
  return Status::ok();
}

// Opset 18 lets both take a plain tensor or sequence too (it "has" its element), and OptionalHasElement an
// omitted input (it has none).
Status OptionalHasElement(KernelContext& ctx) {
  bool has = false;
  if (ctx.has_input(0)) {
    const Tensor& x = ctx.in(0);
    has = !(x.is_container() && x.desc().kind == ValueKind::kOptional) || !x.elements().empty();
  }
  *ctx.allocate_as<bool>(0, DataType::kBool, {}) = has;
  return Status::ok();
}

Status OptionalGetElement(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  if (!(x.is_container() && x.desc().kind == ValueKind::kOptional)) {
    // A plain tensor may sit in a planned arena whose block is reused once x dies: copy it.
    if (x.is_container()) {
      ctx.set_output(0, x);
    } else {
      ctx.set_output_copy(0, x, dims_of(x));
    }
    return Status::ok();
  }
  if (x.elements().empty()) return ctx.error("the optional input is empty");
  ctx.set_output(0, x.elements()[0]);
  return Status::ok();
}

}  // namespace

void register_sequence(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"ConcatFromSequence", ConcatFromSequence},
                       {"Optional", Optional},
                       {"OptionalGetElement", OptionalGetElement},
                       {"OptionalHasElement", OptionalHasElement},
                       {"SequenceAt", SequenceAt},
                       {"SequenceConstruct", SequenceConstruct},
                       {"SequenceEmpty", SequenceEmpty},
                       {"SequenceErase", SequenceErase},
                       {"SequenceInsert", SequenceInsert},
                       {"SequenceLength", SequenceLength},
                       {"SplitToSequence", SplitToSequence}});
}

}  // namespace graphsplit::kernels
