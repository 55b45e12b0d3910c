// Shared by the two .om encodings (om_io.cpp: the readable Model, also the JSON view; om_compact.cpp: the
// compact file). Not installed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::om_detail {

// A tensor whose bytes must match its descriptor; `what` prefixes the error.
sdk::Status make_tensor(sdk::TensorDesc d, const std::string& data, const std::string& what, sdk::Tensor* t);

// The compact encoding (format 2). The file is `head` (the tables) followed by `graphs`, written apart so
// that a large model's graphs are never copied to join them.
sdk::Status write_compact(const sdk::Graph& root, std::string* head, std::vector<std::string>* graphs);
sdk::Status read_compact(std::string_view bytes, const std::string& source,
                         std::unique_ptr<sdk::Graph>* root);

}  // namespace graphsplit::om_detail
