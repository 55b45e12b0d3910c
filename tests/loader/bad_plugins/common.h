// Pieces shared by the deliberately broken plugins. Each .cpp builds one libgsplugin_<name>.so.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "graphsplit/sdk/plugin.h"

namespace bad {

class NoopPass final : public graphsplit::sdk::Pass {
 public:
  explicit NoopPass(const graphsplit::sdk::PluginContext&) {}
  graphsplit::sdk::Status run(graphsplit::sdk::Graph&, graphsplit::sdk::PassContext&,
                              bool* changed) override {
    *changed = false;
    return graphsplit::sdk::Status::ok();
  }
};

// Writes the file named by $GS_MARKER when the library's static constructors run.
struct Marker {
  Marker() {
    if (const char* path = std::getenv("GS_MARKER")) {
      if (FILE* f = std::fopen(path, "w")) std::fclose(f);
    }
  }
};

}  // namespace bad
