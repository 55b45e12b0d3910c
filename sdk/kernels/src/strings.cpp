// String tensors: Cast to and from string, StringNormalizer, StringConcat, StringSplit, RegexFullMatch (RE2,
// whose matching time is linear in the input, unlike std::regex) and TfIdfVectorizer.
#include <re2/re2.h>

#include <charconv>
#include <clocale>
#include <cwctype>
#include <limits>
#include <map>
#include <set>

#include "broadcast.h"
#include "kernel.h"

namespace graphsplit::kernels {

namespace {

// ONNX's spellings of the special values (Cast: "NaN", "INF", "-INF").
template <class C>
std::string number_text(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "INF" : "-INF";
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest text that reads back as the same value
  return std::string(buf, r.ptr);
}

// "1.5", "-INF", "nan", "+inf", "1e-3": strtod's grammar, as ONNX specifies for Cast from string.
bool parse_number(const std::string& text, double* out) {
  const char* begin = text.c_str();
  char* end = nullptr;
  *out = std::strtod(begin, &end);
  return end != begin && *end == '\0';
}

}  // namespace

Status read_strings(const KernelContext& ctx, size_t i, std::vector<std::string>* out) {
  if (dtype_of(ctx.in(i)) != DataType::kString)
    return ctx.error("input " + std::to_string(i) + " must be string");
  if (!ctx.in(i).strings(out) || static_cast<int64_t>(out->size()) != num_elements(dims_of(ctx.in(i))))
    return ctx.error("input " + std::to_string(i) + " holds corrupt strings");
  return Status::ok();
}

void set_strings(KernelContext& ctx, size_t i, const Dims& dims, const std::vector<std::string>& values) {
  ctx.check_rule(i, DataType::kString, dims);
  sdk::TensorDesc desc;
  desc.shape = sdk::Shape(dims);
  ctx.set_output(i, Tensor::from_strings(desc, values));
}

Status cast_string(KernelContext& ctx, const Tensor& x, DataType to) {
  const Dims& dims = dims_of(x);
  const int64_t n = num_elements(dims);
  if (dtype_of(x) == DataType::kString && to == DataType::kString) {
    ctx.set_output_copy(0, x, dims);
    return Status::ok();
  }
  if (to == DataType::kString) {
    std::vector<std::string> text(static_cast<size_t>(n));
    GS_RETURN_IF_ERROR(visit_numeric(dtype_of(x), [&](auto tag) {
      using T = decltype(tag);
      const T* in = data_as<T>(x);
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<T, bool>)
          text[i] = in[i] ? "1" : "0";
        else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
          text[i] = number_text(static_cast<float>(in[i]));
        else
          text[i] = number_text(in[i]);
      }
      return Status::ok();
    }));
    set_strings(ctx, 0, dims, text);
    return Status::ok();
  }
  std::vector<std::string> text;
  GS_RETURN_IF_ERROR(read_strings(ctx, 0, &text));
  std::vector<double> values(text.size());
  for (size_t i = 0; i < text.size(); ++i)
    if (!parse_number(text[i], &values[i]))
      return ctx.error("element " + std::to_string(i) + " \"" + text[i] + "\" is not a number");
  return visit_numeric(to, [&](auto tag) {
    using T = decltype(tag);
    T* out = ctx.allocate_as<T>(0, to, dims);
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        const double v = values[i];
        out[i] = std::isnan(v)                                             ? T(0)
                 : v >= static_cast<double>(std::numeric_limits<T>::max()) ? std::numeric_limits<T>::max()
                 : v <= static_cast<double>(std::numeric_limits<T>::lowest())
                     ? std::numeric_limits<T>::lowest()
                     : static_cast<T>(v);
      } else if constexpr (std::is_same_v<T, bool>) {
        out[i] = values[i] != 0;
      } else {
        out[i] = T(static_cast<float>(values[i]));
        if constexpr (std::is_same_v<T, double>) out[i] = values[i];
      }
    }
    return Status::ok();
  });
}

namespace {

// Case mapping of UTF-8 text through the C.UTF-8 locale's tables (every letter, not only ASCII); bytes that
// are not valid UTF-8 are kept as they are.
class CaseMapper {
 public:
  CaseMapper() : locale_(newlocale(LC_CTYPE_MASK, "C.UTF-8", nullptr)) {}
  ~CaseMapper() {
    if (locale_) freelocale(locale_);
  }
  CaseMapper(const CaseMapper&) = delete;
  CaseMapper& operator=(const CaseMapper&) = delete;

  std::string map(const std::string& s, bool upper) const {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size();) {
      char32_t c = 0;
      const size_t len = decode(s, i, &c);
      if (len == 0) {
        out += s[i++];
        continue;
      }
      append(out, convert(c, upper));
      i += len;
    }
    return out;
  }

 private:
  char32_t convert(char32_t c, bool upper) const {
    if (!locale_) {
      if (c < 128)
        return static_cast<char32_t>(upper ? std::toupper(static_cast<int>(c))
                                           : std::tolower(static_cast<int>(c)));
      return c;
    }
    const auto w = static_cast<wint_t>(c);
    return static_cast<char32_t>(upper ? towupper_l(w, locale_) : towlower_l(w, locale_));
  }
  static size_t decode(const std::string& s, size_t i, char32_t* c) {
    const auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const unsigned char lead = b(0);
    size_t len = lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + len > s.size()) return 0;
    char32_t v = len == 1 ? lead : lead & (0x7f >> len);
    for (size_t k = 1; k < len; ++k) {
      if ((b(k) & 0xc0) != 0x80) return 0;
      v = (v << 6) | (b(k) & 0x3f);
    }
    *c = v;
    return len;
  }
  static void append(std::string& out, char32_t c) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xc0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xe0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (c & 0x3f));
    }
  }
  locale_t locale_;
};

const CaseMapper& case_mapper() {
  static const CaseMapper mapper;
  return mapper;
}

// Input [C] or [1, C]: stopwords removed, then the case changed; nothing left gives one empty string.
Status StringNormalizer(KernelContext& ctx) {
  const Dims& dims = dims_of(ctx.in(0));
  if (!(dims.size() == 1 || (dims.size() == 2 && dims[0] == 1)))
    return ctx.error("the input must have shape [C] or [1, C], got " + dims_string(dims));
  std::vector<std::string> in;
  GS_RETURN_IF_ERROR(read_strings(ctx, 0, &in));
  const std::string action = ctx.attr_string("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER")
    return ctx.error("case_change_action must be NONE, LOWER or UPPER, got '" + action + "'");
  const bool sensitive = ctx.attr_int("is_case_sensitive", 0) != 0;
  const CaseMapper& cm = case_mapper();
  std::set<std::string> stop;
  if (const sdk::AttrValue* v = ctx.node->attrs().get("stopwords"); v && v->as_strings())
    for (const std::string& w : *v->as_strings()) stop.insert(sensitive ? w : cm.map(w, false));
  std::vector<std::string> out;
  for (const std::string& s : in) {
    if (stop.count(sensitive ? s : cm.map(s, false))) continue;
    out.push_back(action == "NONE" ? s : cm.map(s, action == "UPPER"));
  }
  if (out.empty()) out.emplace_back();
  Dims od = dims;
  od.back() = static_cast<int64_t>(out.size());
  set_strings(ctx, 0, od, out);
  return Status::ok();
}

// Both string inputs broadcast; each output element is the pair joined.
Status StringConcat(KernelContext& ctx) {
  std::vector<std::string> a, b;
  GS_RETURN_IF_ERROR(read_strings(ctx, 0, &a));
  GS_RETURN_IF_ERROR(read_strings(ctx, 1, &b));
  Dims od;
  if (!broadcast_shape(dims_of(ctx.in(0)), dims_of(ctx.in(1)), &od))
    return ctx.error("shapes do not broadcast");
  std::vector<std::string> out(static_cast<size_t>(num_elements(od)));
  for_each_broadcast2(od, dims_of(ctx.in(0)), dims_of(ctx.in(1)),
                      [&](int64_t o, int64_t i, int64_t j) { out[o] = a[i] + b[j]; });
  set_strings(ctx, 0, od, out);
  return Status::ok();
}

// Pieces of `s`: split on `delimiter`, or (empty delimiter) on runs of spaces with empty pieces dropped; at
// most maxsplit splits (the rest stays in the last piece).
std::vector<std::string> split_string(const std::string& s, const std::string& delimiter, int64_t maxsplit) {
  std::vector<std::string> pieces;
  if (delimiter.empty()) {
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && s[i] == ' ') ++i;
      if (i == s.size()) break;
      if (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit) {
        pieces.push_back(s.substr(i));
        break;
      }
      size_t j = s.find(' ', i);
      if (j == std::string::npos) j = s.size();
      pieces.push_back(s.substr(i, j - i));
      i = j;
    }
    return pieces;
  }
  size_t start = 0;
  for (;;) {
    const size_t at = s.find(delimiter, start);
    if (at == std::string::npos || (maxsplit >= 0 && static_cast<int64_t>(pieces.size()) == maxsplit)) {
      pieces.push_back(s.substr(start));
      return pieces;
    }
    pieces.push_back(s.substr(start, at - start));
    start = at + delimiter.size();
  }
}

// Output 0: the pieces, padded with "" to the longest; output 1: the number of pieces per element.
Status StringSplit(KernelContext& ctx) {
  std::vector<std::string> in;
  GS_RETURN_IF_ERROR(read_strings(ctx, 0, &in));
  const std::string delimiter = ctx.attr_string("delimiter");
  const int64_t maxsplit = ctx.attr_int("maxsplit", -1);
  std::vector<std::vector<std::string>> pieces;
  std::vector<int64_t> counts;
  size_t widest = 0;
  for (const std::string& s : in) {
    pieces.push_back(split_string(s, delimiter, maxsplit));
    counts.push_back(static_cast<int64_t>(pieces.back().size()));
    widest = std::max(widest, pieces.back().size());
  }
  Dims od = dims_of(ctx.in(0));
  od.push_back(static_cast<int64_t>(widest));
  std::vector<std::string> flat;
  for (auto& p : pieces) {
    p.resize(widest);
    flat.insert(flat.end(), p.begin(), p.end());
  }
  set_strings(ctx, 0, od, flat);
  if (ctx.wants_output(1))
    std::copy(counts.begin(), counts.end(),
              ctx.allocate_as<int64_t>(1, DataType::kInt64, dims_of(ctx.in(0))));
  return Status::ok();
}

Status RegexFullMatch(KernelContext& ctx) {
  const std::string pattern = ctx.attr_string("pattern");
  RE2::Options options;
  options.set_log_errors(false);
  const RE2 re(pattern, options);
  if (!re.ok()) return ctx.error("invalid regular expression '" + pattern + "': " + re.error());
  std::vector<std::string> in;
  GS_RETURN_IF_ERROR(read_strings(ctx, 0, &in));
  bool* out = ctx.allocate_as<bool>(0, DataType::kBool, dims_of(ctx.in(0)));
  for (size_t i = 0; i < in.size(); ++i) out[i] = RE2::FullMatch(in[i], re);
  return Status::ok();
}

// ---- TfIdfVectorizer: n-grams of the input rows (items `skip` apart) counted against a pool.
struct NgramPool {
  std::map<std::vector<int64_t>, int64_t> index;  // n-gram (token ids) -> output column
  int64_t columns = 0;
};

Status read_pool(const KernelContext& ctx, bool strings, std::map<std::string, int64_t>* string_ids,
                 std::vector<int64_t>* tokens) {
  if (strings) {
    const sdk::AttrValue* v = ctx.node->attrs().get("pool_strings");
    if (!v || !v->as_strings()) return ctx.error("a string input needs pool_strings");
    for (const std::string& s : *v->as_strings()) {
      auto it = string_ids->emplace(s, static_cast<int64_t>(string_ids->size())).first;
      tokens->push_back(it->second);
    }
    return Status::ok();
  }
  auto ints = ctx.attr_ints("pool_int64s");
  if (!ints) return ctx.error("an integer input needs pool_int64s");
  *tokens = *ints;
  return Status::ok();
}

Status build_pool(const KernelContext& ctx, const std::vector<int64_t>& tokens, NgramPool* pool) {
  const std::vector<int64_t> counts = ctx.attr_ints("ngram_counts").value_or(std::vector<int64_t>{});
  const std::vector<int64_t> indexes = ctx.attr_ints("ngram_indexes").value_or(std::vector<int64_t>{});
  size_t k = 0;
  for (size_t g = 0; g < counts.size(); ++g) {
    const auto n = static_cast<int64_t>(g + 1);
    const int64_t begin = counts[g];
    const int64_t end = g + 1 < counts.size() ? counts[g + 1] : static_cast<int64_t>(tokens.size());
    if (begin < 0 || end > static_cast<int64_t>(tokens.size()) || begin > end || (end - begin) % n != 0)
      return ctx.error("ngram_counts does not divide the pool into n-grams");
    for (int64_t at = begin; at < end; at += n, ++k) {
      if (k >= indexes.size() || indexes[k] < 0) return ctx.error("ngram_indexes is shorter than the pool");
      pool->index[std::vector<int64_t>(tokens.begin() + at, tokens.begin() + at + n)] = indexes[k];
      pool->columns = std::max(pool->columns, indexes[k] + 1);
    }
  }
  return Status::ok();
}

void count_row(const int64_t* row, int64_t len, const NgramPool& pool, int64_t min_n, int64_t max_n,
               int64_t max_skip, float* counts) {
  std::vector<int64_t> gram;
  for (int64_t n = min_n; n <= max_n; ++n) {
    for (int64_t skip = 0; skip <= (n == 1 ? 0 : max_skip); ++skip) {
      const int64_t step = skip + 1;
      for (int64_t start = 0; start + (n - 1) * step < len; ++start) {
        gram.clear();
        for (int64_t t = 0; t < n; ++t) gram.push_back(row[start + t * step]);
        auto it = pool.index.find(gram);
        if (it != pool.index.end()) counts[it->second] += 1;
      }
    }
  }
}

Status TfIdfVectorizer(KernelContext& ctx) {
  const Tensor& x = ctx.in(0);
  const Dims& dims = dims_of(x);
  if (dims.empty() || dims.size() > 2) return ctx.error("the input must have rank 1 or 2");
  const bool strings = dtype_of(x) == DataType::kString;
  std::map<std::string, int64_t> ids;
  std::vector<int64_t> pool_tokens, input;
  GS_RETURN_IF_ERROR(read_pool(ctx, strings, &ids, &pool_tokens));
  if (strings) {
    std::vector<std::string> text;
    GS_RETURN_IF_ERROR(read_strings(ctx, 0, &text));
    for (const std::string& s : text) {
      auto it = ids.find(s);
      input.push_back(it == ids.end() ? -1 : it->second);  // -1: in no n-gram of the pool
    }
  } else {
    input = to_int64s(x);
  }
  NgramPool pool;
  GS_RETURN_IF_ERROR(build_pool(ctx, pool_tokens, &pool));
  const int64_t min_n = ctx.attr_int("min_gram_length", 1), max_n = ctx.attr_int("max_gram_length", 1);
  const int64_t max_skip = ctx.attr_int("max_skip_count", 0);
  if (min_n < 1 || max_n < min_n || max_skip < 0) return ctx.error("invalid n-gram lengths or skip count");
  const std::string mode = ctx.attr_string("mode", "TF");
  const std::vector<float> weights = ctx.attr_floats("weights").value_or(std::vector<float>{});
  const int64_t rows = dims.size() == 2 ? dims[0] : 1, len = dims.back();
  Dims od = dims.size() == 2 ? Dims{rows, pool.columns} : Dims{pool.columns};
  float* out = ctx.allocate_as<float>(0, DataType::kFloat, od);
  std::fill(out, out + rows * pool.columns, 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float* c = out + r * pool.columns;
    count_row(input.data() + r * len, len, pool, min_n, max_n, max_skip, c);
    for (int64_t k = 0; k < pool.columns; ++k) {
      const float w = static_cast<size_t>(k) < weights.size() ? weights[k] : 1.0f;
      if (mode == "IDF")
        c[k] = c[k] > 0 ? w : 0.0f;
      else if (mode == "TFIDF")
        c[k] *= w;
    }
  }
  return Status::ok();
}

}  // namespace

void register_strings(std::vector<KernelEntry>* t) {
  t->insert(t->end(), {{"RegexFullMatch", RegexFullMatch},
                       {"StringConcat", StringConcat},
                       {"StringNormalizer", StringNormalizer},
                       {"StringSplit", StringSplit},
                       {"TfIdfVectorizer", TfIdfVectorizer}});
}

}  // namespace graphsplit::kernels
