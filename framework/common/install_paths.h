// Where the executables find their plugins and default pipeline: relative to the executable, the same layout
// in the build tree (build/bin, build/lib/graphsplit/plugins, build/share/graphsplit) as in an install.
#pragma once

#include <string>
#include <vector>

namespace graphsplit {

std::string executable_dir();
// Where executable_dir() points instead of the running executable's folder: the Python module, whose process
// is python3, names the bin folder of its own build tree or install prefix.
void set_executable_dir(std::string dir);
std::vector<std::string> builtin_plugin_paths();
std::string default_pipeline_path();
// "a:b" values (repeatable options) -> folders.
std::vector<std::string> split_search_paths(const std::vector<std::string>& values);

}  // namespace graphsplit
