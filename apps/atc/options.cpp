#include "options.h"

#include <CLI/CLI.hpp>

namespace graphsplit::atc {

void register_core_options(CLI::App& app, AtcOptions& o) {
  app.add_option("--model", o.model, "Model file to convert (ONNX)");
  app.add_option("--framework", o.framework,
                 "Framework of --model: 5 = ONNX (inferred from the extension when omitted)");
  app.add_option("--output", o.output, "Output path; '.om' is appended unless already present");
  app.add_option("--input_shape", o.input_shape,
                 "Input shapes, e.g. \"x:1,3,224,224;mask:\" (-1 = unknown dimension, empty = scalar)");
  app.add_option("--log", o.log, "Log level on stderr: debug, info, warning, error, null")
      ->capture_default_str();
  app.add_option("--mode", o.mode, "0: convert --model to .om; 1: convert --om to JSON")
      ->capture_default_str();
  app.add_option("--om", o.om, "With --mode=1: the .om (or .onnx) file to convert to JSON");
  app.add_option("--json", o.json, "With --mode=1: the JSON file to write");
  app.add_option(
      "--onnx", o.onnx,
      "With --mode=1: write the .om's partitioned model as ONNX (functions per PartitionedCall and "
      "engine segment)");
  app.add_flag("--version", o.version, "Print the version and exit");
}

void register_pipeline_options(CLI::App& app, AtcOptions& o) {
  app.add_option("--pipeline", o.pipeline,
                 "Pipeline configuration (TOML); default: share/graphsplit/pipeline.toml beside atc");
  app.add_option(
      "--plugin_path", o.plugin_paths,
      "Folder(s) searched for plugins before the pipeline's search_paths (':'-separated, repeatable)");
  app.add_option("--options", o.ge_options,
                 "GE options, e.g. --options=\"ge.exec.static_model_ops_lower_limit=6;ge.topoSortingMode=3\" "
                 "(repeatable)");
  app.add_flag("--list_plugins", o.list_plugins,
               "List the plugins found (descriptors, components, options, op tables) and exit");
  app.add_flag("--print_pipeline", o.print_pipeline,
               "Print the resolved pipeline as TOML, every option with its source, and exit");
  app.add_option("--validate_pipeline", o.validate_pipeline,
                 "Check a pipeline file (syntax, schema, plugins, options), print every problem, and exit");
  app.add_flag("--timing", o.timing, "Print wall time per pipeline entry and whether it changed the graph");
  app.add_option("--dump_graph", o.dump_graph,
                 "Write the graph after each entry to this folder (NNN_<entry>.json and .dot)");
  app.add_option("--dump_placement", o.dump_placement,
                 "Write JSON: every node's engine and each asked engine's verdict and reason");
  app.add_option("--explain", o.explain, "Print why the named node went where it did");
  app.add_option("--partition_report", o.partition_report,
                 "Write JSON: every graph (kind, static/dynamic, engine, stage, size), boundary edges and "
                 "partition decisions; a name ending in .html writes a self-contained HTML page instead");
  app.add_option(
      "--export_onnx", o.export_onnx,
      "Also write the partitioned model as ONNX: each PartitionedCall and engine segment a function "
      "of domain graphsplit, the decisions in its metadata (opens in Netron, runs in ONNX Runtime)");
  app.add_option("--entry_timeout", o.entry_timeout,
                 "Seconds a pipeline entry may run; past it atc stops with an error naming the entry and its "
                 "plugin (0 = no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  app.add_option("--verify_each", o.verify_each,
                 "Run the IR verifier after every entry (true/false; default on in Debug builds)");
}

void register_gear_options(CLI::App& app, AtcOptions& o) {
  app.add_option("--dynamic_batch_size", o.dynamic_batch_size,
                 "Batch gears, e.g. \"1,4,8,16\"; needs --input_shape with -1 as dimension 0");
  app.add_option("--dynamic_image_size", o.dynamic_image_size,
                 "Image-size gears, e.g. \"224,224;448,448\"; needs --input_shape with -1 as H and W "
                 "(of --input_format)");
  app.add_option("--dynamic_dims", o.dynamic_dims,
                 "Gears of every -1 of --input_shape in order, e.g. \"1,640,640;4,960,960\"");
  app.add_option("--input_format", o.input_format,
                 "Layout of the inputs: NCHW, NHWC or ND (default NCHW, as GE's atc for every framework but "
                 "TensorFlow)");
  app.add_option("--max_nodes", o.max_nodes,
                 "Refuse models with more nodes, inputs and initializers than this, in all graphs")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--max_nesting_depth", o.max_nesting_depth,
                 "Refuse models whose subgraphs nest deeper than this (GE: 25)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
}

}  // namespace graphsplit::atc
