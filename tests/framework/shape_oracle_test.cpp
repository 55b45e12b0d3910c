// graphsplit's shape inference against libonnx 1.12's, the oracle where it knows the answer (opsets <= 17):
// every model of Debian's libonnx-testdata and the pinned real models, imported both ways, value by value.
// Never contradicting it (two different numbers), never less precise (a type, rank or number libonnx has
// and graphsplit lacks); how many dimensions graphsplit knows and libonnx does not is reported.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "import/onnx_import.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;

struct Value {
  sdk::TensorDesc desc;
  std::string op;  // the producer's type
};
using Values = std::map<std::string, Value>;  // "<graph>/<value>" -> descriptor

Values values_of(const sdk::Graph& root) {
  Values out;
  auto collect = [&](const sdk::Graph& g) {
    for (const sdk::Node* n : g.nodes()) {
      for (size_t o = 0; o < n->num_outputs(); ++o) {
        if (!n->output_name(o).empty())
          out[g.name() + "/" + n->output_name(o)] = {n->output_desc(o), n->type()};
      }
    }
  };
  collect(root);
  for (const sdk::Graph* g : root.subgraphs()) collect(*g);
  return out;
}

struct Tally {
  int64_t models = 0, values = 0, contradictions = 0, less_precise = 0, more_precise_dims = 0;
  std::vector<std::string> problems;
  std::map<std::string, int64_t> by_op;
  void problem(const std::string& p) {
    const size_t open = p.find(" ("), close = p.find("): ours");
    const std::string op = open != std::string::npos && close != std::string::npos
                               ? p.substr(open + 2, close - open - 2)
                               : std::string("import");
    if (++by_op[op] <= 3) problems.push_back(p);
  }
};

void compare(const std::string& model, const Values& ours, const Values& oracle, Tally* t) {
  for (const auto& [name, oracle_value] : oracle) {
    auto it = ours.find(name);
    const sdk::TensorDesc& want = oracle_value.desc;
    if (it == ours.end() || want.kind != sdk::ValueKind::kTensor) continue;
    const sdk::TensorDesc& got = it->second.desc;
    ++t->values;
    const std::string where = model + ": " + name + " (" + it->second.op + "): ours " + got.to_string() +
                              ", libonnx " + want.to_string();
    if (want.dtype != sdk::DataType::kUndefined && got.dtype != want.dtype) {
      ++(got.dtype == sdk::DataType::kUndefined ? t->less_precise : t->contradictions);
      t->problem(where);
      continue;
    }
    if (want.shape.is_unknown_rank()) {
      if (!got.shape.is_unknown_rank()) {
        for (int64_t d : got.shape.dims()) t->more_precise_dims += d >= 0;
      }
      continue;
    }
    if (got.shape.is_unknown_rank()) {
      ++t->less_precise;
      t->problem(where);
      continue;
    }
    if (got.shape.rank() != want.shape.rank()) {
      ++t->contradictions;
      t->problem(where);
      continue;
    }
    for (size_t i = 0; i < got.shape.rank(); ++i) {
      const int64_t g = got.shape.dims()[i], w = want.shape.dims()[i];
      if (w >= 0 && g >= 0 && g != w) {
        ++t->contradictions;
        t->problem(where);
      } else if (w >= 0 && g < 0) {
        ++t->less_precise;
        t->problem(where);
      } else if (w < 0 && g >= 0) {
        ++t->more_precise_dims;
      }
    }
  }
}

void check_model(const fs::path& path, Tally* t) {
  OnnxImportOptions reference;
  reference.onnx_reference_inference = true;
  std::unique_ptr<sdk::Graph> oracle, ours;
  if (!import_onnx_file(path.string(), reference, &oracle).is_ok()) return;  // not a model both can read
  ++t->models;
  sdk::Status s = import_onnx_file(path.string(), {}, &ours);
  if (!s.is_ok()) {
    ++t->less_precise;
    t->problem(path.string() + ": libonnx imports it, graphsplit's inference refuses it: " + s.message());
    return;
  }
  compare(path.parent_path().filename().string(), values_of(*ours), values_of(*oracle), t);
}

TEST(ShapeOracle, NeverContradictsNorLosesToLibonnx) {
  Tally t;
  std::vector<fs::path> models;
  for (const auto& e : fs::recursive_directory_iterator(GRAPHSPLIT_TESTDATA_DIR)) {
    if (e.path().filename() == "model.onnx") models.push_back(e.path());
  }
  if (fs::exists(GRAPHSPLIT_MODEL_DIR)) {
    for (const auto& e : fs::directory_iterator(GRAPHSPLIT_MODEL_DIR)) {
      if (e.path().extension() == ".onnx") models.push_back(e.path());
    }
  }
  std::sort(models.begin(), models.end());
  for (const fs::path& m : models) check_model(m, &t);
  for (const std::string& p : t.problems) ADD_FAILURE() << p;
  for (const auto& [op, n] : t.by_op) ADD_FAILURE() << op << ": " << n << " values";
  EXPECT_EQ(t.contradictions, 0);
  EXPECT_EQ(t.less_precise, 0);
  EXPECT_GT(t.models, 1000);
  std::printf(
      "shape oracle: %lld models, %lld values compared, %lld contradictions, %lld less precise, "
      "%lld dimensions more precise than libonnx\n",
      static_cast<long long>(t.models), static_cast<long long>(t.values),
      static_cast<long long>(t.contradictions), static_cast<long long>(t.less_precise),
      static_cast<long long>(t.more_precise_dims));
}

}  // namespace
}  // namespace graphsplit
