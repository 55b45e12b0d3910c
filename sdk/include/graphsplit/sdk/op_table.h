// Engine op-support tables: capabilities as data. The host reads each engine's TOML table (installed beside
// the plugin library) and hands it to the engine; the SDK's default support check answers from it.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/types.h"

namespace graphsplit::sdk {

enum class DynamicShapeSupport : int { kNone = 0, kBounded = 1, kFull = 2 };
GS_SDK_API std::string_view to_string(DynamicShapeSupport d);

struct OpSupportRow {
  std::string type;
  int64_t opset_min = 1;
  int64_t opset_max = std::numeric_limits<int32_t>::max();
  std::vector<DataType> dtypes;         // input 0 and every output; empty: any
  std::vector<DataType> input_dtypes;   // input 0 only, instead of dtypes; empty: as dtypes
  std::vector<DataType> output_dtypes;  // every output, instead of dtypes; empty: as dtypes
  std::vector<Format> formats;          // empty: any
  DynamicShapeSupport dynamic_shape = DynamicShapeSupport::kNone;
  bool tiling = false;           // needs run-time tiling data when shapes change
  bool tiling_sink = false;      // that tiling can run on AI CPU (ge.tiling_schedule_optimize)
  bool addr_refresh = true;      // arguments can be repointed without recompiling
  bool shape_dependent = false;  // the final answer needs the engine's check_support
  int64_t cost = 0;              // relative; lower is preferred
  int32_t line = 0;              // where the row was declared, for messages
};

class GS_SDK_API OpSupportTable {
 public:
  OpSupportTable() = default;
  explicit OpSupportTable(std::string source) : source_(std::move(source)) {}

  // Rows are kept sorted by type; a second row for a type is refused (returns false).
  bool add(OpSupportRow row);
  const OpSupportRow* find(std::string_view type) const;
  const std::vector<OpSupportRow>& rows() const { return rows_; }
  bool empty() const { return rows_.empty(); }
  // The file the table came from.
  const std::string& source() const { return source_; }
  // The op store's kernel library name (GE's kernel lib, e.g. "DNN_VM_HOST_CPU_OP_STORE").
  const std::string& kernel_lib() const { return kernel_lib_; }
  void set_kernel_lib(std::string name) { kernel_lib_ = std::move(name); }

 private:
  std::string source_;
  std::string kernel_lib_;
  std::vector<OpSupportRow> rows_;
};

}  // namespace graphsplit::sdk
