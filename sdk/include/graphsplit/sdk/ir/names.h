// The project's vocabulary: every op type, attribute name and engine name that means something to more than
// one component, declared once. Components refer to these constants instead of repeating the strings, so that
// a rename is a compile error wherever the name matters. GE's spellings throughout, so that GE users find the
// attributes they know.
#pragma once

#include <string_view>

namespace graphsplit::sdk {

// Op types with a meaning to the framework or a partitioner (GE's names for the structural ones).
namespace op {
inline constexpr std::string_view kData = "Data";
inline constexpr std::string_view kRefData = "RefData";
inline constexpr std::string_view kAippData = "AippData";
inline constexpr std::string_view kConst = "Const";
inline constexpr std::string_view kConstant = "Constant";  // ONNX's and GE's second spelling of Const
inline constexpr std::string_view kVariable = "Variable";
inline constexpr std::string_view kVariableV2 = "VariableV2";
inline constexpr std::string_view kVarHandleOp = "VarHandleOp";
inline constexpr std::string_view kNetOutput = "NetOutput";
inline constexpr std::string_view kNoOp = "NoOp";
inline constexpr std::string_view kPartitionedCall = "PartitionedCall";
inline constexpr std::string_view kPlaceHolder = "PlaceHolder";
inline constexpr std::string_view kEnd = "End";
inline constexpr std::string_view kIf = "If";
inline constexpr std::string_view kCase = "Case";
inline constexpr std::string_view kWhile = "While";
inline constexpr std::string_view kLoop = "Loop";
inline constexpr std::string_view kScan = "Scan";
inline constexpr std::string_view kSequenceMap = "SequenceMap";
inline constexpr std::string_view kMapIndex = "MapIndex";
}  // namespace op

// A graph input in any of GE's three spellings.
inline bool is_data_like(std::string_view type) {
  return type == op::kData || type == op::kRefData || type == op::kAippData;
}
// A constant in either spelling.
inline bool is_const_like(std::string_view type) {
  return type == op::kConst || type == op::kConstant;
}
// GE's variable ops (their value lives across runs).
inline bool is_variable_like(std::string_view type) {
  return type == op::kVariable || type == op::kVariableV2 || type == op::kVarHandleOp || type == op::kRefData;
}

// Attribute names with a meaning across the project (GE spellings where GE has one).
namespace attr {
// ---- the IR and ONNX import
inline constexpr std::string_view kIndex = "index";  // Data: position among graph inputs
inline constexpr std::string_view kParentNodeIndex = "_parent_node_index";  // inner Data: parent input index
inline constexpr std::string_view kValue = "value";                         // Const: the tensor
inline constexpr std::string_view kOutputNames = "output_names";            // NetOutput: graph output names
inline constexpr std::string_view kOuterValue = "_outer_value";             // Data made for a captured value
inline constexpr std::string_view kDomain = "_onnx_domain";                 // op domain when not ai.onnx
inline constexpr std::string_view kOnnxOpsetImport = "_onnx_opset_import";  // root: "domain:version" entries
inline constexpr std::string_view kOnnxIrVersion = "_onnx_ir_version";
inline constexpr std::string_view kOnnxProducer = "_onnx_producer";
inline constexpr std::string_view kSessionGraphId = "_session_graph_id";

// ---- placement (written by placement.engine_place, read by the partitioners, reports and the runtime)
inline constexpr std::string_view kOpEngineName = "_op_engine_name";
inline constexpr std::string_view kOpKernelLibName = "_op_kernel_lib_name";
// User overrides.
inline constexpr std::string_view kSpecifiedEngineName = "_specified_engine_name";
inline constexpr std::string_view kSpecifiedKernelLibName = "_specified_kernel_lib_name";
inline constexpr std::string_view kLxfusionEngineName = "_lxfusion_engine_name";
inline constexpr std::string_view kLxfusionOpKernelLibName = "_lxfusion_op_kernel_lib_name";
inline constexpr std::string_view kHostTensor = "_host_tensor";
inline constexpr std::string_view kHostTensorAsModelInput = "_host_tensor_as_model_input";
inline constexpr std::string_view kSingleOpScene = "_single_op_scene";

// ---- stage partition
inline constexpr std::string_view kStageLevel = "_stage_level";
inline constexpr std::string_view kPipelinePartitioned = "_pipeline_partitioned";

// ---- dynamic-shape partition
inline constexpr std::string_view kIsUnknownShape = "_is_unknown_shape";
inline constexpr std::string_view kForceUnknownShape = "_force_unknown_shape";
inline constexpr std::string_view kOwnerGraphIsUnknown = "OwnerGraphIsUnknown";
inline constexpr std::string_view kDynamicShapePartitioned = "_dynamic_shape_partitioned";
inline constexpr std::string_view kNoNeedDynamicShapePartition = "_no_need_dynamic_shape_partition";
inline constexpr std::string_view kMemoryDiscontiguousAllocation = "_memory_discontiguous_allocation";
inline constexpr std::string_view kControlFlowGroup = "_control_flow_group";
inline constexpr std::string_view kDynamicTilingDependOp = "_dynamic_tiling_depend_op";
inline constexpr std::string_view kTilingSinkOp = "_tiling_sink_op";
inline constexpr std::string_view kIsSupportAddrRefresh = "_is_support_addr_refresh";
inline constexpr std::string_view kOpNoTiling = "_op_no_tiling";

// ---- engine partition
inline constexpr std::string_view kCompositeEngineName = "_composite_engine_name";
inline constexpr std::string_view kCompositeEngineKernelLibName = "_composite_engine_kernel_lib_name";
inline constexpr std::string_view kStreamLabel = "_stream_label";
inline constexpr std::string_view kUserStreamLabel = "_user_stream_label";
inline constexpr std::string_view kNoNeedPartition = "_no_need_partition";
inline constexpr std::string_view kNoNeedPartitionAndMerge = "_no_need_partition_and_merge";
inline constexpr std::string_view kNoNeedMerge = "_no_need_merge";
inline constexpr std::string_view kParentGraphName = "_parent_graph_name";
inline constexpr std::string_view kIsRootGraph = "_is_root_graph";
// Every partitioned graph after merge-back, for reports: "name|engine|stream label|node count" entries.
inline constexpr std::string_view kEnginePartitions = "_engine_partitions";

// ---- multi-batch gears
inline constexpr std::string_view kEnableDynamicBatch = "_enable_dynamic_batch";
inline constexpr std::string_view kBatchNum = "_batch_num";
inline constexpr std::string_view kPredValuePrefix = "_pred_value_";  // Case: "_pred_value_<gear>"
inline constexpr std::string_view kMbatchOriginInputDims = "_mbatch_origin_input_dims";
inline constexpr std::string_view kIsMultiBatchShapeData = "_is_multi_batch_shape_data";
inline constexpr std::string_view kDynamicBatchUnknownDimIndex = "_dynamic_batch_unknown_dim_index";
inline constexpr std::string_view kDynamicBatchUnknownDataIndex = "_dynamic_batch_unknown_data_index";
inline constexpr std::string_view kMbatchInsertedNode = "mbatch-inserted-node";
inline constexpr std::string_view kSubgraphIsMultiDims = "_subgraph_is_multi_dims";
inline constexpr std::string_view kSubgraphMultiDimsIndex = "_subgraph_multi_dims_index";
inline constexpr std::string_view kSubgraphMultiDimsInputShape = "_subgraph_multi_dims_input_shape";
inline constexpr std::string_view kSubgraphMultiDimsInputDims = "_subgraph_multi_dims_input_dims";
inline constexpr std::string_view kOpMultiDimsInputDims = "_op_multi_dims_input_dims";
inline constexpr std::string_view kOpMaxShape = "_op_max_shape";
}  // namespace attr

// Session options of graphsplit's own, beside GE's (the host's option table declares their types and
// defaults; every plugin reads them from PluginContext::ge_options()).
namespace option {
// The largest tensor a CPU kernel may allocate, in bytes (0: no limit). omrun --max_tensor_bytes sets it.
inline constexpr std::string_view kMaxTensorBytes = "graphsplit.max_tensor_bytes";
}  // namespace option

// GE's engine and kernel-library names of the engines that ship with the project, and of GE's own local
// engine (part of the host, not a plugin).
namespace engine {
inline constexpr std::string_view kAiCore = "AIcoreEngine";
inline constexpr std::string_view kVectorCore = "VectorEngine";
inline constexpr std::string_view kAiCpu = "DNN_VM_AICPU";
inline constexpr std::string_view kAiCpuAscend = "DNN_VM_AICPU_ASCEND";
inline constexpr std::string_view kDvpp = "DNN_VM_DVPP";
inline constexpr std::string_view kHostCpu = "DNN_VM_HOST_CPU";
inline constexpr std::string_view kGeLocal = "DNN_VM_GE_LOCAL";
inline constexpr std::string_view kGeLocalKernelLib = "DNN_VM_GE_LOCAL_OP_STORE";
}  // namespace engine

}  // namespace graphsplit::sdk
