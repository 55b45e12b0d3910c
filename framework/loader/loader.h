// Finding, checking and loading plugin libraries. Boost.DLL stays inside loader.cpp.
//
// Libraries are never unloaded (the default policy of the design guide): a LoadedLibrary lives in a
// process-lifetime table, and every object created from it holds a reference besides. The same file reached
// twice (through a symlink or two search paths) loads once.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "graphsplit/sdk/plugin.h"
#include "graphsplit/sdk/status.h"

namespace graphsplit {

class LoadedLibrary {
 public:
  ~LoadedLibrary();
  const std::string& path() const { return path_; }
  const gs_plugin_desc& descriptor() const { return *desc_; }
  std::string plugin_name() const { return desc_->name; }
  std::string plugin_version() const { return desc_->version; }
  // "libgsplugin_x.so 1.2.0, SDK ABI 1.0": how messages name a plugin.
  std::string label() const;
  // Objects created from this library that are still alive.
  int live_objects() const { return live_.load(); }

 private:
  friend class PluginLoader;
  template <class T>
  friend class PluginHandle;
  struct Impl;
  LoadedLibrary() = default;
  std::string path_;
  const gs_plugin_desc* desc_ = nullptr;
  std::unique_ptr<Impl> impl_;
  mutable std::atomic<int> live_{0};
};

// Owns one object made by a plugin: destroys it with the plugin's own destroy function first, then releases
// the library reference.
template <class T>
class PluginHandle {
 public:
  PluginHandle() = default;
  PluginHandle(std::shared_ptr<const LoadedLibrary> lib, T* object, void (*destroy)(void*))
      : lib_(std::move(lib)), object_(object), destroy_(destroy) {
    if (object_) ++lib_->live_;
  }
  PluginHandle(PluginHandle&& o) noexcept { *this = std::move(o); }
  PluginHandle& operator=(PluginHandle&& o) noexcept {
    reset();
    lib_ = std::move(o.lib_);
    object_ = o.object_;
    destroy_ = o.destroy_;
    o.object_ = nullptr;
    return *this;
  }
  ~PluginHandle() { reset(); }
  void reset() {
    if (object_) {
      destroy_(object_);  // the object goes first; lib_ is released after, by the member destructor or below
      object_ = nullptr;
      --lib_->live_;
    }
    lib_.reset();
  }
  T* get() const { return object_; }
  T* operator->() const { return object_; }
  const LoadedLibrary& library() const { return *lib_; }

 private:
  std::shared_ptr<const LoadedLibrary> lib_;
  T* object_ = nullptr;
  void (*destroy_)(void*) = nullptr;
};

struct LoaderOptions {
  std::vector<std::string> search_paths;  // tried in order
  bool strict_abi_tag = false;            // a different compiler family/major is an error, not a warning
  // "never" (default): loaded libraries stay for the life of the process. "checked" (tests): a library is
  // unloaded when the last registry, handle or reference to it is released.
  bool unload_checked = false;
};

class PluginLoader {
 public:
  explicit PluginLoader(LoaderOptions options) : options_(std::move(options)) {}

  // Finds libgsplugin_<name>.so in the search paths. The message of a failure lists every path tried, what
  // happened there, and a hint.
  sdk::Status load(const std::string& name, std::shared_ptr<const LoadedLibrary>* out) const;
  // Loads one file: pre-flight (exports read without running any code), dlopen, descriptor checks.
  sdk::Status load_file(const std::string& path, std::shared_ptr<const LoadedLibrary>* out) const;
  // Every libgsplugin_*.so in the search paths, de-duplicated, in search order then name order.
  std::vector<std::string> discover() const;

  const LoaderOptions& options() const { return options_; }

 private:
  LoaderOptions options_;
};

// The host's ABI tag (the same macro plugins compile in).
const char* host_abi_tag();

}  // namespace graphsplit
