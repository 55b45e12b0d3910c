// Reading and writing the .om model file (framework/model/om.proto). Protobuf stays behind this header.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

inline constexpr std::string_view kOmMagic = "GSOM";
// Format 2 (om.proto's Compact) is what atc writes; format 1 (Model) files are still read. The JSON view is
// always a Model document.
inline constexpr uint32_t kOmFormatVersion = 2;

// Serializes the root graph and all its subgraphs. The bytes depend only on the IR (deterministic).
sdk::Status serialize_om(const sdk::Graph& root, std::string* bytes);
// Writes the .om atomically; `size`, if given, receives the file's size.
sdk::Status write_om_file(const sdk::Graph& root, const std::string& path, size_t* size = nullptr);

// Parses and rebuilds the IR, then runs the verifier. `source` names the file in messages.
sdk::Status parse_om(std::string_view bytes, const std::string& source, std::unique_ptr<sdk::Graph>* root);
sdk::Status read_om_file(const std::string& path, std::unique_ptr<sdk::Graph>* root);

// The model as JSON through protobuf's JSON printer (atc --mode=1).
sdk::Status om_to_json(std::string_view om_bytes, const std::string& source, std::string* json);
sdk::Status graph_to_json(const sdk::Graph& root, std::string* json);
// The JSON view back to .om bytes (loaded and verified in between): the round trip is lossless.
sdk::Status json_to_om(std::string_view json, const std::string& source, std::string* om_bytes);

}  // namespace graphsplit
