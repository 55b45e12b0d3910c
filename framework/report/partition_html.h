// The partition report as one self-contained HTML page (atc --partition_report=FILE.html;
// docs/visualisation.md).
#pragma once

#include <string>
#include <vector>

#include "graphsplit/sdk/ir/graph.h"
#include "graphsplit/sdk/reason.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

// Past this many nodes in all, the picture draws each subgraph as one node (Graphviz's layout is superlinear
// and a picture of thousands of boxes shows nothing).
inline constexpr size_t kHtmlReportNodeCap = 400;
// Past this many subgraphs the picture is left out (2,000 clusters take 6 s to lay out on the test machine).
inline constexpr size_t kHtmlReportClusterCap = 2000;

// Needs Graphviz's `dot` on PATH; without it, an error that says so.
sdk::Status partition_report_html(const sdk::Graph& root, const std::string& model,
                                  const std::vector<sdk::Decision>& decisions, std::string* html);

}  // namespace graphsplit
