// Shared by the two .om encodings (om_io.cpp: the readable Model, also the JSON view; om_compact.cpp: the
// compact file). Not installed.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::om_detail {

// A tensor whose bytes must match its descriptor; `what` prefixes the error.
// Takes `data` by value: a caller done with its message moves the bytes in instead of copying them.
sdk::Status make_tensor(sdk::TensorDesc d, std::string data, const std::string& what, sdk::Tensor* t);

// The compact encoding (format 2), handed to `sink` in pieces, in file order: the tables, then each graph. A
// piece is valid only during the call. An error from the sink stops the write and is returned.
using PieceSink = std::function<sdk::Status(std::string_view piece)>;
sdk::Status write_compact(const sdk::Graph& root, const PieceSink& sink);
sdk::Status read_compact(std::string_view bytes, const std::string& source,
                         std::unique_ptr<sdk::Graph>* root);

}  // namespace graphsplit::om_detail
