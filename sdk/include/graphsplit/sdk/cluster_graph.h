// The cluster engine shared by every partitioner (design guide, section 6).
//
// A ClusterGraph starts with one cluster per node of a graph and merges clusters while keeping the quotient
// graph acyclic. It maintains an exact topological order of the clusters incrementally, in the spirit of
// Pearce-Kelly (as XLA's GraphCycles): a merge reorders only the rank window the merged clusters span, in one
// step, and reachability questions are answered inside that window too, so no step is quadratic and nothing
// is precomputed. Nodes map to clusters through union-find; a rank index gives the order without sorting.
//
// Determinism: clusters are numbered by the node order of the graph at build time, adjacency lists are
// sorted, and nothing depends on hash order or pointer values.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graphsplit/sdk/export.h"
#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit::sdk {

class GS_SDK_API ClusterGraph final {
 public:
  using Id = uint32_t;
  static constexpr Id kNone = UINT32_MAX;

  // One cluster per live node of `graph`, edges for every data and control edge. Fails if the graph has a
  // cycle. Cluster ids are the nodes' positions in the graph's current order (0 .. num_nodes-1).
  static Status build(const Graph& graph, std::unique_ptr<ClusterGraph>* out);
  ~ClusterGraph();
  ClusterGraph(const ClusterGraph&) = delete;
  ClusterGraph& operator=(const ClusterGraph&) = delete;

  // ---- structure
  size_t num_clusters() const;  // live clusters
  bool is_live(Id c) const;
  // The cluster holding a node (path-compressing union-find).
  Id cluster_of(const Node* node) const;
  Id cluster_of_position(size_t node_position) const;
  // Members in the graph's node order.
  std::vector<Node*> members(Id c) const;
  size_t size(Id c) const;
  // The member earliest in the graph's node order (what members(c).front() gives, in O(1)).
  Node* first_member(Id c) const;
  // Neighbouring clusters, in topological (rank) order.
  std::vector<Id> successors(Id c) const;
  std::vector<Id> predecessors(Id c) const;
  // The same into *out (replacing what it held), reusing its capacity: a loop over every cluster allocated a
  // vector per call.
  void successors(Id c, std::vector<Id>* out) const;
  void predecessors(Id c, std::vector<Id>* out) const;
  bool has_edge(Id from, Id to) const;
  size_t num_successors(Id c) const;
  size_t num_predecessors(Id c) const;
  // Live clusters in a topological order of the quotient graph.
  std::vector<Id> topological_order() const;
  int64_t rank(Id c) const;

  // ---- queries
  // Is there a path from `from` to `to` (length >= 1)? Searches only the rank window between them.
  bool reachable(Id from, Id to) const;

  // ---- merges: each returns the surviving cluster, or kNone when refused (nothing changed then)

  // Merges two clusters unless that would create a cycle: an edge between them must be the only path between
  // them, and clusters with no edge must not reach each other.
  Id try_merge(Id a, Id b);
  // Merges `from`, `to` and every cluster on a path from `from` to `to` (GE's MergeAllPathFrom). Never
  // refused: the set of clusters on all such paths is convex. Without a path it merges just the two, if they
  // are unrelated.
  Id merge_all_paths(Id from, Id to);

  // ---- verification (tests, debug builds)
  // An independent Kahn sort of the quotient graph plus the rank invariant on every edge.
  Status check_invariants() const;

 private:
  struct Impl;
  GS_SDK_LOCAL explicit ClusterGraph(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace graphsplit::sdk
