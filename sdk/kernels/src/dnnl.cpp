// oneDNN behind the float Conv, MatMul and Gemm kernels. Why oneDNN: its JIT kernels use the machine's widest
// vector units (AVX-512 here) where OpenBLAS is pinned to an older core type, and it is the library under
// OpenVINO's and PyTorch's CPU paths. Primitives are created on a step's first call for a shape and kept in
// the step's state, so a static segment's later runs only execute them.
#include "dnnl.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>
#include <utility>

namespace graphsplit::kernels::dnnl_path {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

std::atomic<int> thread_budget{0};
// A share of the budget for kernels called on this thread (the runtime's concurrent segments); 0: the whole.
thread_local int local_budget = 0;

const dnnl::engine& cpu() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream stream(cpu());
  return stream;
}

// Per-thread scratchpads: primitives run with user-managed scratchpads so that two threads executing the same
// primitive never share one.
char* thread_scratchpad(size_t bytes) {
  thread_local std::vector<char> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

// Runs a primitive made with a user scratchpad on this thread's stream, giving it this thread's scratchpad.
void execute(const dnnl::primitive& prim, const dnnl::primitive_desc& pd,
             std::unordered_map<int, memory>& args) {
  const size_t pad = pd.scratchpad_desc().get_size();
  if (pad) args.emplace(DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), cpu(), thread_scratchpad(pad)));
  auto& stream = thread_stream();
  prim.execute(stream, args);
  stream.wait();
}

memory::desc plain(const Dims& dims) {
  memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return memory::desc(memory::dims(dims.begin(), dims.end()), memory::data_type::f32, strides);
}

dnnl::primitive_attr user_scratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// oneDNN's threads follow the calling thread's OpenMP setting.
void apply_threads(int want) {
  if (want <= 0) want = omp_get_num_procs();
  if (omp_get_max_threads() != want) omp_set_num_threads(want);
}

// ---- convolution

// What a step keeps between calls. A step whose calls take different paths (a ConvTranspose whose geometry
// changes between runs) finds another path's state there: it then works with a state of its own.
struct StepState {
  virtual ~StepState() = default;
};

struct ConvPlan {
  ConvSpec spec;
  dnnl::primitive_desc pd;
  dnnl::primitive prim;
  memory::desc user_x, user_w, user_y;
  bool reorder_x = false, reorder_w = false, reorder_y = false;
  memory x_blocked, y_blocked, w_blocked;
  dnnl::reorder to_x, to_w, from_y;
  // The weight reordered once when it is a constant: the tensor is held so its bytes stay the ones packed.
  Tensor packed_from;
  // Memory objects over the caller's buffers (their handles set on each call) and the arguments made once.
  memory ux, uy, uw, ub, scratchpad;
  std::unordered_map<int, memory> args;
};

struct ConvState : StepState {
  std::mutex mutex;
  std::vector<std::unique_ptr<ConvPlan>> plans;  // most recent last; a few shapes per dynamic step
};
constexpr size_t kMaxPlans = 4;

// oneDNN's weight dims ([G,] O, I, k...) over ONNX's bytes: Conv's [M, C / G, k...] is that layout already;
// ConvTranspose's [C, M / G, k...] has I and O swapped, which strides express without a copy.
memory::desc onnx_weights(const ConvSpec& s) {
  const int64_t g = s.group;
  const Dims k(s.w.begin() + 2, s.w.end());
  const int64_t ks = num_elements(k);
  const int64_t out_g = s.transposed ? s.w[1] : s.w[0] / g, in_g = s.transposed ? s.w[0] / g : s.w[1];
  memory::dims dims, strides;
  if (g > 1) {
    dims.push_back(g);
    strides.push_back(out_g * in_g * ks);
  }
  dims.push_back(out_g);
  strides.push_back(s.transposed ? ks : in_g * ks);
  dims.push_back(in_g);
  strides.push_back(s.transposed ? out_g * ks : ks);
  const Dims ks_strides = strides_of(k);
  dims.insert(dims.end(), k.begin(), k.end());
  strides.insert(strides.end(), ks_strides.begin(), ks_strides.end());
  return memory::desc(dims, memory::data_type::f32, strides);
}

// oneDNN's brgemm-based convolutions block the reduction by the thread count they are made for (seen on an
// AVX-512 AMD EPYC: brgconv_1x1 blocked PP-OCRv4 rec's 240-channel 1x1 convolutions by 48 on one thread and
// by 32 on two, and the bits changed with the budget). The next implementation in oneDNN's order is taken
// instead; where there is none, the brgemm one.
template <class Pd>
Pd budget_independent(Pd pd) {
  const Pd first = pd;
  while (std::string_view(pd.impl_info_str()).rfind("brg", 0) == 0) {
    if (!pd.next_impl()) return first;
  }
  return pd;
}

// The primitive descriptor for the spec: oneDNN picks the layouts (`any`), so a channels-last caller gets the
// same implementation as a plain one. Throws dnnl::error when oneDNN has no implementation.
dnnl::primitive_desc conv_pd(const ConvSpec& s) {
  const size_t spatial = s.x.size() - 2;
  auto any = [](const Dims& d) {
    return memory::desc(memory::dims(d.begin(), d.end()), memory::data_type::f32, Tag::any);
  };
  memory::dims strides(s.strides.begin(), s.strides.end()), dil(spatial),
      pl(s.pad_begin.begin(), s.pad_begin.end()), pr(s.pad_end.begin(), s.pad_end.end());
  for (size_t i = 0; i < spatial; ++i) dil[i] = s.dilations[i] - 1;
  const memory::desc bias = s.bias ? plain({s.y[1]}) : memory::desc();
  const memory::dims wd = onnx_weights(s).dims();
  const memory::desc x = any(s.x), w = memory::desc(wd, memory::data_type::f32, Tag::any), y = any(s.y);
  const auto inference = dnnl::prop_kind::forward_inference;
  if (s.transposed) {
    dnnl::deconvolution_forward::desc desc(inference, dnnl::algorithm::deconvolution_direct, x, w, bias, y,
                                           strides, dil, pl, pr);
    return budget_independent(dnnl::deconvolution_forward::primitive_desc(desc, user_scratchpad(), cpu()));
  }
  dnnl::convolution_forward::desc desc(inference, dnnl::algorithm::convolution_direct, x, w, bias, y, strides,
                                       dil, pl, pr);
  return budget_independent(dnnl::convolution_forward::primitive_desc(desc, user_scratchpad(), cpu()));
}

memory::desc nhwc(const Dims& d) {
  return memory::desc(memory::dims(d.begin(), d.end()), memory::data_type::f32, Tag::acdb);
}

std::unique_ptr<ConvPlan> make_conv_plan(const ConvSpec& s) {
  auto plan = std::make_unique<ConvPlan>();
  plan->spec = s;
  plan->user_x = s.channels_last ? nhwc(s.x) : plain(s.x);
  plan->user_w = onnx_weights(s);
  plan->user_y = s.channels_last ? nhwc(s.y) : plain(s.y);
  plan->pd = conv_pd(s);
  plan->prim = dnnl::primitive(plan->pd);
  const memory::desc px = plan->pd.src_desc(), pw = plan->pd.weights_desc(), py = plan->pd.dst_desc();
  plan->reorder_x = px != plan->user_x;
  plan->reorder_w = pw != plan->user_w;
  plan->reorder_y = py != plan->user_y;
  if (plan->reorder_x) {
    plan->x_blocked = memory(px, cpu());
    plan->to_x = dnnl::reorder(dnnl::reorder::primitive_desc(cpu(), plan->user_x, cpu(), px));
  }
  if (plan->reorder_w) {
    plan->w_blocked = memory(pw, cpu());
    plan->to_w = dnnl::reorder(dnnl::reorder::primitive_desc(cpu(), plan->user_w, cpu(), pw));
  }
  if (plan->reorder_y) {
    plan->y_blocked = memory(py, cpu());
    plan->from_y = dnnl::reorder(dnnl::reorder::primitive_desc(cpu(), py, cpu(), plan->user_y));
  }
  plan->ux = memory(plan->user_x, cpu(), nullptr);
  plan->uy = memory(plan->user_y, cpu(), nullptr);
  plan->uw = memory(plan->user_w, cpu(), nullptr);
  plan->args = {{DNNL_ARG_SRC, plan->reorder_x ? plan->x_blocked : plan->ux},
                {DNNL_ARG_WEIGHTS, plan->reorder_w ? plan->w_blocked : plan->uw},
                {DNNL_ARG_DST, plan->reorder_y ? plan->y_blocked : plan->uy}};
  if (s.bias) {
    plan->ub = memory(plain({s.y[1]}), cpu(), nullptr);
    plan->args.emplace(DNNL_ARG_BIAS, plan->ub);
  }
  if (plan->pd.scratchpad_desc().get_size()) {
    plan->scratchpad = memory(plan->pd.scratchpad_desc(), cpu(), nullptr);
    plan->args.emplace(DNNL_ARG_SCRATCHPAD, plan->scratchpad);
  }
  return plan;
}

void run_conv(ConvPlan& plan, const KernelContext& ctx, const float* x, const float* w, const float* b,
              float* y) {
  auto& stream = thread_stream();
  plan.ux.set_data_handle(const_cast<float*>(x));
  plan.uy.set_data_handle(y);
  if (plan.reorder_x) plan.to_x.execute(stream, plan.ux, plan.x_blocked);
  if (plan.reorder_w) {
    const bool constant = ctx.input_is_constant(1);
    if (!constant || plan.packed_from.data() != ctx.in(1).data()) {
      plan.uw.set_data_handle(const_cast<float*>(w));
      plan.to_w.execute(stream, plan.uw, plan.w_blocked);
      plan.packed_from = constant ? ctx.in(1) : Tensor();
    }
  } else {
    plan.uw.set_data_handle(const_cast<float*>(w));
  }
  if (b) plan.ub.set_data_handle(const_cast<float*>(b));
  const size_t pad = plan.pd.scratchpad_desc().get_size();
  if (pad) plan.scratchpad.set_data_handle(thread_scratchpad(pad));
  plan.prim.execute(stream, plan.args);
  if (plan.reorder_y) plan.from_y.execute(stream, plan.y_blocked, plan.uy);
  stream.wait();
}

// ---- one-input, one-output primitives on plain layouts (pooling, softmax)

template <class Spec>
struct SimplePlan {
  Spec spec;
  dnnl::primitive_desc pd;
  dnnl::primitive prim;
};

template <class Spec>
struct SimpleState : StepState {
  std::mutex mutex;
  std::vector<std::unique_ptr<SimplePlan<Spec>>> plans;
};

template <class Pd, class Prim, class Spec>
std::unique_ptr<SimplePlan<Spec>> simple_plan(const Spec& s, const typename Prim::desc& desc) {
  auto plan = std::make_unique<SimplePlan<Spec>>();
  plan->spec = s;
  Pd pd(desc, user_scratchpad(), cpu());
  plan->prim = Prim(pd);
  plan->pd = pd;
  return plan;
}

std::unique_ptr<SimplePlan<PoolSpec>> make_pool_plan(const PoolSpec& s) {
  const size_t spatial = s.x.size() - 2;
  memory::dims dil(spatial);
  for (size_t i = 0; i < spatial; ++i) dil[i] = s.dilations[i] - 1;
  const auto alg = s.max           ? dnnl::algorithm::pooling_max
                   : s.include_pad ? dnnl::algorithm::pooling_avg_include_padding
                                   : dnnl::algorithm::pooling_avg_exclude_padding;
  dnnl::pooling_v2_forward::desc desc(
      dnnl::prop_kind::forward_inference, alg, s.channels_last ? nhwc(s.x) : plain(s.x),
      s.channels_last ? nhwc(s.y) : plain(s.y), memory::dims(s.strides.begin(), s.strides.end()),
      memory::dims(s.kernel.begin(), s.kernel.end()), dil,
      memory::dims(s.pad_begin.begin(), s.pad_begin.end()), memory::dims(s.pad_end.begin(), s.pad_end.end()));
  return simple_plan<dnnl::pooling_v2_forward::primitive_desc, dnnl::pooling_v2_forward>(s, desc);
}

std::unique_ptr<SimplePlan<SoftmaxSpec>> make_softmax_plan(const SoftmaxSpec& s) {
  const auto inference = dnnl::prop_kind::forward_inference;
  if (s.log) {
    dnnl::logsoftmax_forward::desc desc(inference, plain(s.x), static_cast<int>(s.axis));
    return simple_plan<dnnl::logsoftmax_forward::primitive_desc, dnnl::logsoftmax_forward>(s, desc);
  }
  dnnl::softmax_forward::desc desc(inference, plain(s.x), static_cast<int>(s.axis));
  return simple_plan<dnnl::softmax_forward::primitive_desc, dnnl::softmax_forward>(s, desc);
}

// ---- matrix product

constexpr int64_t kRowBlock = 64;
constexpr int64_t kColBlock = 256;
// Below this many multiply-adds a product is one call: cutting it would cost more than it saves.
constexpr int64_t kBlockedWork = int64_t{1} << 20;

struct MatMulPlan {
  MatMulSpec spec;
  int64_t rows = 0, cols = 0;  // block shape
  // Primitives by (rows is the remainder, cols is the remainder).
  dnnl::matmul::primitive_desc pd[2][2];
  dnnl::matmul prim[2][2];
};

struct MatMulState : StepState {
  std::mutex mutex;
  std::vector<std::unique_ptr<MatMulPlan>> plans;
};

// B is [k, n] row-major (leading dimension ldb), or with trans_b stored as [n, k] (Gemm's transB).
dnnl::matmul::primitive_desc matmul_pd(int64_t m, int64_t n, int64_t k, int64_t ldb, int64_t ldc,
                                       bool trans_b) {
  const auto f32 = memory::data_type::f32;
  memory::desc a({m, k}, f32, memory::dims{k, 1});
  memory::desc b({k, n}, f32, trans_b ? memory::dims{1, k} : memory::dims{ldb, 1});
  memory::desc c({m, n}, f32, memory::dims{ldc, 1});
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), user_scratchpad(), cpu());
}

std::unique_ptr<MatMulPlan> make_matmul_plan(const MatMulSpec& s) {
  auto plan = std::make_unique<MatMulPlan>();
  plan->spec = s;
  const int64_t total_rows = s.stride_b == 0 ? s.batch * s.m : s.m;
  const bool blocked = s.batch * s.m * s.n * s.k >= kBlockedWork;
  plan->rows = blocked ? std::min(kRowBlock, total_rows) : total_rows;
  plan->cols = blocked ? std::min(kColBlock, s.n) : s.n;
  const int64_t rows[2] = {plan->rows, total_rows % plan->rows}, cols[2] = {plan->cols, s.n % plan->cols};
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 2; ++c) {
      if (rows[r] == 0 || cols[c] == 0) continue;
      plan->pd[r][c] = matmul_pd(rows[r], cols[c], s.k, s.n, s.n, s.trans_b);
      plan->prim[r][c] = dnnl::matmul(plan->pd[r][c]);
    }
  return plan;
}

template <class State, class Plan, class Spec, class Make>
Plan* find_plan(State& state, const Spec& spec, Make make) {
  auto& plans = state.plans;
  for (size_t i = plans.size(); i-- > 0;) {
    if (plans[i]->spec == spec) {
      std::rotate(plans.begin() + static_cast<int64_t>(i), plans.begin() + static_cast<int64_t>(i) + 1,
                  plans.end());
      return plans.back().get();
    }
  }
  if (plans.size() >= kMaxPlans) plans.erase(plans.begin());
  plans.push_back(make(spec));
  return plans.back().get();
}

void run_matmul_block(const MatMulPlan& plan, int r, int c, const float* a, const float* b, float* y) {
  const auto& pd = plan.pd[r][c];
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(pd.src_desc(), cpu(), const_cast<float*>(a))},
      {DNNL_ARG_WEIGHTS, memory(pd.weights_desc(), cpu(), const_cast<float*>(b))},
      {DNNL_ARG_DST, memory(pd.dst_desc(), cpu(), y)}};
  const size_t pad = pd.scratchpad_desc().get_size();
  if (pad) args.emplace(DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), cpu(), thread_scratchpad(pad)));
  auto& stream = thread_stream();
  plan.prim[r][c].execute(stream, args);
  stream.wait();
}

void run_matmul(const MatMulPlan& plan, const float* a, const float* b, float* c) {
  const MatMulSpec& s = plan.spec;
  const int64_t total_rows = s.stride_b == 0 ? s.batch * s.m : s.m;
  const int64_t matrices = s.stride_b == 0 ? 1 : s.batch;
  const int64_t row_blocks = (total_rows + plan.rows - 1) / plan.rows;
  const int64_t col_blocks = (s.n + plan.cols - 1) / plan.cols;
  const int64_t blocks = matrices * row_blocks * col_blocks;
  auto block = [&](int64_t i) {
    const int64_t mat = i / (row_blocks * col_blocks), rb = i / col_blocks % row_blocks, cb = i % col_blocks;
    const int64_t r0 = rb * plan.rows, c0 = cb * plan.cols;
    const int last_r = r0 + plan.rows > total_rows ? 1 : 0, last_c = c0 + plan.cols > s.n ? 1 : 0;
    const float* pa = a + mat * s.stride_a + r0 * s.k;
    const float* pb = b + mat * s.stride_b + (s.trans_b ? c0 * s.k : c0);
    float* pc = c + mat * total_rows * s.n + r0 * s.n + c0;
    run_matmul_block(plan, last_r, last_c, pa, pb, pc);
  };
  const int want = threads() > 0 ? threads() : omp_get_num_procs();
  if (blocks == 1 || want == 1) {
    for (int64_t i = 0; i < blocks; ++i) block(i);
    return;
  }
#pragma omp parallel for num_threads(want) schedule(static)
  for (int64_t i = 0; i < blocks; ++i) block(i);
}

template <class State>
State& state_of(KernelContext& ctx, std::unique_ptr<State>* local) {
  if (ctx.state && !*ctx.state) *ctx.state = std::shared_ptr<StepState>(std::make_shared<State>());
  if (ctx.state) {
    if (auto* s = dynamic_cast<State*>(static_cast<StepState*>(ctx.state->get()))) return *s;
  }
  *local = std::make_unique<State>();
  return **local;
}

}  // namespace

void set_threads(int threads) {
  thread_budget = threads;
}
int threads() {
  return local_budget > 0 ? local_budget : thread_budget.load();
}

}  // namespace graphsplit::kernels::dnnl_path

namespace graphsplit::kernels {

int kernel_threads() {
  const int t = dnnl_path::threads();
  return t > 0 ? t : omp_get_num_procs();
}

int thread_budget() {
  return kernel_threads();
}

int set_thread_share(int threads) {
  return std::exchange(dnnl_path::local_budget, std::max(threads, 0));
}

}  // namespace graphsplit::kernels

namespace graphsplit::kernels::dnnl_path {

// Below this many multiply-adds a convolution runs on one thread: waking the others costs more than they save
// (the values are the same either way; only the primitive's split differs).
constexpr int64_t kParallelConvWork = int64_t{1} << 19;

int conv_threads(const ConvSpec& s) {
  // Multiply-adds: every output value sums (input channels per group x kernel taps) products; for a
  // ConvTranspose every input value scatters (output channels per group x taps).
  const int64_t taps = num_elements(Dims(s.w.begin() + 2, s.w.end())), g = std::max<int64_t>(1, s.group);
  const int64_t work =
      s.transposed ? num_elements(s.x) * (s.y[1] / g) * taps : num_elements(s.y) * (s.x[1] / g) * taps;
  if (work < kParallelConvWork) return 1;
  return threads() > 0 ? threads() : omp_get_num_procs();
}

// A 1-D convolution as a 2-D one of height 1: oneDNN's 2-D implementations are the tuned ones (its 1-D
// depthwise convolution falls back to im2col + GEMM, 20x slower on silero VAD's). The bytes are the same.
void as_2d(ConvSpec& s) {
  if (s.x.size() != 3) return;
  for (Dims* d : {&s.x, &s.w, &s.y}) d->insert(d->begin() + 2, 1);
  s.strides.insert(s.strides.begin(), 1);
  s.dilations.insert(s.dilations.begin(), 1);
  s.pad_begin.insert(s.pad_begin.begin(), 0);
  s.pad_end.insert(s.pad_end.begin(), 0);
}

bool conv_f32(KernelContext& ctx, ConvSpec spec, const float* x, const float* w, const float* b, float* y) {
  as_2d(spec);
  std::unique_ptr<ConvState> local;
  ConvState& state = state_of(ctx, &local);
  std::lock_guard lock(state.mutex);
  spec.threads = conv_threads(spec);
  apply_threads(spec.threads);
  ConvPlan* plan = nullptr;
  try {
    plan = find_plan<ConvState, ConvPlan>(state, spec, make_conv_plan);
  } catch (const dnnl::error&) {
    return false;  // no implementation for this geometry
  }
  run_conv(*plan, ctx, x, w, b, y);
  return true;
}

namespace {

struct Int8Plan {
  Int8Spec spec;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  bool exact = false;
};
struct Int8State : StepState {
  std::mutex mutex;
  std::vector<std::unique_ptr<Int8Plan>> plans;
};

std::unique_ptr<Int8Plan> make_int8_plan(const Int8Spec& s) {
  auto plan = std::make_unique<Int8Plan>();
  plan->spec = s;
  dnnl::primitive_attr attr = user_scratchpad();
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  memory::desc a({s.m, s.k}, s.a_signed ? memory::data_type::s8 : memory::data_type::u8,
                 memory::dims{s.k, 1});
  memory::desc b({s.k, s.n}, memory::data_type::s8, memory::dims{s.n, 1});
  memory::desc c({s.m, s.n}, memory::data_type::s32, memory::dims{s.n, 1});
  plan->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, cpu());
  const std::string impl = plan->pd.impl_info_str();
  plan->exact = impl.rfind("brg:", 0) == 0 &&
                (impl.find("vnni") != std::string::npos || impl.find("amx") != std::string::npos);
  if (plan->exact) plan->prim = dnnl::matmul(plan->pd);
  return plan;
}

}  // namespace

bool int8_matmul(KernelContext& ctx, Int8Spec spec, const void* a, const int8_t* b, int32_t* c) {
  std::unique_ptr<Int8State> local;
  Int8State& state = state_of(ctx, &local);
  std::lock_guard lock(state.mutex);
  apply_threads(threads() > 0 ? threads() : omp_get_num_procs());
  Int8Plan* plan = nullptr;
  try {
    plan = find_plan<Int8State, Int8Plan>(state, spec, make_int8_plan);
  } catch (const dnnl::error&) {
    return false;
  }
  if (!plan->exact) return false;
  int32_t zero = spec.a_zero;
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(plan->pd.src_desc(), cpu(), const_cast<void*>(a))},
      {DNNL_ARG_WEIGHTS, memory(plan->pd.weights_desc(), cpu(), const_cast<int8_t*>(b))},
      {DNNL_ARG_DST, memory(plan->pd.dst_desc(), cpu(), c)},
      {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC,
       memory(memory::desc({1}, memory::data_type::s32, Tag::x), cpu(), &zero)}};
  execute(plan->prim, plan->pd, args);
  return true;
}

bool conv_supported(ConvSpec spec) {
  as_2d(spec);
  try {
    conv_pd(spec);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

namespace {
struct ReorderPlan {
  Dims nchw;
  bool to_last = true;
  int threads = 1;
  dnnl::reorder prim;
  memory src, dst;
};
struct ReorderState : StepState {
  std::mutex mutex;
  std::vector<std::unique_ptr<ReorderPlan>> plans;
};
}  // namespace

bool reorder_f32(KernelContext& ctx, const Dims& nchw, bool to_last, const float* x, float* y) {
  std::unique_ptr<ReorderState> local;
  ReorderState& state = state_of(ctx, &local);
  std::lock_guard lock(state.mutex);
  const int want = threads() > 0 ? threads() : omp_get_num_procs();
  apply_threads(want);
  auto same = [&](const std::unique_ptr<ReorderPlan>& p) {
    return p->nchw == nchw && p->to_last == to_last && p->threads == want;
  };
  auto it = std::find_if(state.plans.begin(), state.plans.end(), same);
  if (it == state.plans.end()) {
    auto plan = std::make_unique<ReorderPlan>();
    plan->nchw = nchw;
    plan->to_last = to_last;
    plan->threads = want;
    const memory::desc from = to_last ? plain(nchw) : nhwc(nchw), to = to_last ? nhwc(nchw) : plain(nchw);
    try {
      plan->prim = dnnl::reorder(dnnl::reorder::primitive_desc(cpu(), from, cpu(), to));
    } catch (const dnnl::error&) {
      return false;
    }
    plan->src = memory(from, cpu(), nullptr);
    plan->dst = memory(to, cpu(), nullptr);
    if (state.plans.size() >= kMaxPlans) state.plans.erase(state.plans.begin());
    state.plans.push_back(std::move(plan));
    it = std::prev(state.plans.end());
  }
  ReorderPlan& plan = **it;
  plan.src.set_data_handle(const_cast<float*>(x));
  plan.dst.set_data_handle(y);
  auto& stream = thread_stream();
  plan.prim.execute(stream, plan.src, plan.dst);
  stream.wait();
  return true;
}

template <class Spec, class Make>
bool run_simple(KernelContext& ctx, Spec key, Make make, const float* x, float* y) {
  std::unique_ptr<SimpleState<Spec>> local;
  SimpleState<Spec>& state = state_of(ctx, &local);
  std::lock_guard lock(state.mutex);
  key.threads = threads() > 0 ? threads() : omp_get_num_procs();
  apply_threads(key.threads);
  SimplePlan<Spec>* plan = nullptr;
  try {
    plan = find_plan<SimpleState<Spec>, SimplePlan<Spec>>(state, key, make);
  } catch (const dnnl::error&) {
    return false;
  }
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(plan->pd.src_desc(), cpu(), const_cast<float*>(x))},
      {DNNL_ARG_DST, memory(plan->pd.dst_desc(), cpu(), y)}};
  execute(plan->prim, plan->pd, args);
  return true;
}

bool pool_f32(KernelContext& ctx, PoolSpec spec, const float* x, float* y) {
  return run_simple(ctx, std::move(spec), make_pool_plan, x, y);
}

bool pool_supported(const PoolSpec& spec) {
  try {
    make_pool_plan(spec);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}

bool softmax_f32(KernelContext& ctx, SoftmaxSpec spec, const float* x, float* y) {
  return run_simple(ctx, std::move(spec), make_softmax_plan, x, y);
}

bool matmul_f32(KernelContext& ctx, MatMulSpec spec, const float* a, const float* b, float* c) {
  std::unique_ptr<MatMulState> local;
  MatMulState& state = state_of(ctx, &local);
  std::lock_guard lock(state.mutex);
  apply_threads(1);  // every block is a single-threaded primitive; the blocks are what runs in parallel
  MatMulPlan* plan = nullptr;
  try {
    plan = find_plan<MatMulState, MatMulPlan>(state, spec, make_matmul_plan);
  } catch (const dnnl::error&) {
    return false;
  }
  run_matmul(*plan, a, b, c);
  return true;
}

}  // namespace graphsplit::kernels::dnnl_path
