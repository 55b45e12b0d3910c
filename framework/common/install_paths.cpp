#include "common/install_paths.h"

#include <filesystem>

#include "graphsplit/sdk/strings.h"

namespace graphsplit {

namespace fs = std::filesystem;

namespace {
std::string& executable_dir_override() {
  static std::string dir;
  return dir;
}
}  // namespace

void set_executable_dir(std::string dir) {
  executable_dir_override() = std::move(dir);
}

std::string executable_dir() {
  if (!executable_dir_override().empty()) return executable_dir_override();
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

std::vector<std::string> builtin_plugin_paths() {
  return {(fs::path(executable_dir()) / ".." / "lib" / "graphsplit" / "plugins").lexically_normal().string()};
}

std::string default_pipeline_path() {
  return (fs::path(executable_dir()) / ".." / "share" / "graphsplit" / "pipeline.toml")
      .lexically_normal()
      .string();
}

std::vector<std::string> split_search_paths(const std::vector<std::string>& values) {
  std::vector<std::string> out;
  for (const std::string& v : values) {
    for (std::string& folder : sdk::split(v, ':'))
      if (!folder.empty()) out.push_back(std::move(folder));
  }
  return out;
}

}  // namespace graphsplit
