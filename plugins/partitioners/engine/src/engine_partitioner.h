// GE's EnginePartitioner (reference, section 4.3-4.4): each graph is cut into engine subgraphs joined by
// End/PlaceHolder pairs, every engine optimises its own subgraphs, and the pieces are merged back into one
// graph. Composite mode clusters by composite engine, atomic mode by engine; both also by stream label.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graphsplit/sdk/context.h"
#include "graphsplit/sdk/ir/topo.h"
#include "graphsplit/sdk/pass.h"

namespace graphsplit::plugins::engine {

// GE spellings.
inline constexpr std::string_view kDefaultDataEngine = "ENGINE_DEFAULT_DATA";
inline constexpr std::string_view kInputGraphEngine = "inputNodesSubGraph";
inline constexpr std::string_view kPeerIndex = "peerIndex";
inline constexpr std::string_view kParentOpType = "parentOpType";
inline constexpr std::string_view kParentNodeName = "_parentNodeName";
inline constexpr std::string_view kParentId = "parentId";
inline constexpr std::string_view kAnchorIndex = "anchorIndex";
inline constexpr std::string_view kPeerNodeName = "_peerNodeName";
inline constexpr std::string_view kFrontEngine = "pld_front_node_engine_name";
inline constexpr std::string_view kRearEngine = "end_rear_node_engine_name";
// Root counter of engine partitions run so far (GE's partition<T> prefix).
inline constexpr std::string_view kPartitionCounter = "_engine_partition_count";

enum class Mode { kAtomic, kComposite };

struct Options {
  Mode mode = Mode::kAtomic;
  bool stable = false;          // ge.topoSortingMode = 3: adjacent merging in node order
  bool merge_siblings = false;  // also merge same-engine clusters that read one cluster (not GE's rule)
  bool cut_always = false;      // cut and merge back even when no engine optimises
  bool no_shortcut = false;     // for tests: the cluster engine even when every node has one engine
  // Composite mode: atomic engine -> composite engine.
  std::map<std::string, std::string> composite_map;
};

// One engine subgraph between split and merge-back: a detached subgraph of the root.
struct EngineSubgraph {
  sdk::Graph* graph = nullptr;
  std::string engine;        // inputNodesSubGraph for the input graph
  std::string stream_label;  // of its first node
  int rank = 0;              // 0 = the input graph
};

// What split() made of one graph.
struct GraphPartition {
  sdk::Graph* source = nullptr;           // emptied by split(), refilled by merge_back()
  std::vector<EngineSubgraph> subgraphs;  // by rank
  int64_t pairs = 0;                      // End/PlaceHolder pairs made
};

// Splits `graph` (sorted first by `sort_mode`) into engine subgraphs. `partition_index` is GE's T,
// `next_pair` numbers the pairs (GE's P) and moves on.
sdk::Status split(sdk::Graph& graph, const Options& options, sdk::TopoSortMode sort_mode,
                  int64_t partition_index, int64_t* next_pair, GraphPartition* out);
// Puts every node back, joining each End to the consumers of its PlaceHolder, and removes the subgraphs.
sdk::Status merge_back(GraphPartition& partition, const std::vector<sdk::EngineRef>& engines,
                       sdk::TopoSortMode sort_mode);

class EnginePartitioner final : public sdk::Partitioner {
 public:
  explicit EnginePartitioner(const sdk::PluginContext&) {}
  sdk::Status partition(sdk::Graph& root, sdk::PassContext& ctx, bool* changed) override;

 private:
  sdk::Status run_mode(sdk::Graph& root, sdk::PassContext& ctx, Mode mode, bool* changed);
};

}  // namespace graphsplit::plugins::engine
