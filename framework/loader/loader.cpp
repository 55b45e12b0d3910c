// Boost.DLL 1.74 notes (design guide 3.10): BOOST_DLL_USE_STD_FS is defined for this target; the throwing
// shared_library constructor is used because its message carries dlerror().
#include "loader/loader.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <boost/dll/shared_library.hpp>
#include <filesystem>
#include <map>
#include <mutex>
#include <vector>

#include "loader/elf_exports.h"

namespace graphsplit {
namespace {

namespace fs = std::filesystem;
using sdk::Status;

constexpr std::string_view kEntryPrefix = "graphsplit_plugin_descriptor_v";
constexpr size_t kDescriptor10Size = sizeof(gs_plugin_desc);

std::mutex& load_mutex() {
  static std::mutex m;
  return m;
}

// Process-lifetime table of loaded libraries, keyed by (device, inode). Deliberately never destroyed: static
// destructors must not unload plugins (design guide, section 3.7). Under "never" the table pins each library;
// under "checked" it only remembers it, so the last user's release unloads it.
struct TableEntry {
  std::shared_ptr<const LoadedLibrary> pinned;
  std::weak_ptr<const LoadedLibrary> seen;
};
std::map<std::pair<dev_t, ino_t>, TableEntry>& loaded_table() {
  static auto* table = new std::map<std::pair<dev_t, ino_t>, TableEntry>();
  return *table;
}

std::string field(std::string_view tag, std::string_view key) {
  // "gcc-12;libstdc++;cxx11abi=1;glibcxx_debug=0" -> the part for key ("compiler" = first entry)
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= tag.size()) {
    size_t end = tag.find(';', start);
    if (end == std::string_view::npos) end = tag.size();
    parts.emplace_back(tag.substr(start, end - start));
    start = end + 1;
  }
  if (key == "compiler") return parts.empty() ? "" : parts[0];
  if (key == "stdlib") return parts.size() > 1 ? parts[1] : "";
  for (const std::string& p : parts) {
    if (p.rfind(std::string(key) + "=", 0) == 0) return p.substr(key.size() + 1);
  }
  return "";
}

std::string hint_for(const std::string& dl_error) {
  if (dl_error.find("cannot open shared object file") != std::string::npos) {
    return "hint: a dependency is missing; run 'ldd' on the plugin or set LD_DEBUG=libs";
  }
  if (dl_error.find("undefined symbol") != std::string::npos) {
    return "hint: the plugin needs a symbol nothing provides; was it linked against the right SDK (built "
           "with -z defs)?";
  }
  if (dl_error.find("version `") != std::string::npos) {
    return "hint: the plugin needs a newer SDK or C++ runtime than this host has";
  }
  return "";
}

Status validate(const gs_plugin_desc* d, const std::string& path, bool strict_abi_tag) {
  auto refuse = [&](const std::string& why) {
    return Status::failed_precondition("refusing plugin " + path + ": " + why);
  };
  if (!d) return refuse("the descriptor function returned null");
  if (d->magic != GS_PLUGIN_MAGIC) return refuse("corrupt or foreign descriptor (bad magic)");
  if (d->struct_size < kDescriptor10Size) {
    return refuse("corrupt or foreign descriptor (struct_size " + std::to_string(d->struct_size) + " < " +
                  std::to_string(kDescriptor10Size) + ")");
  }
  const std::string plugin_sdk = d->sdk_version ? d->sdk_version : "?";
  if (d->abi_major != GS_SDK_ABI_MAJOR) {
    return refuse("it was built for SDK ABI " + std::to_string(d->abi_major) + "." +
                  std::to_string(d->abi_minor) + " (SDK " + plugin_sdk + "); this host provides SDK ABI " +
                  std::to_string(GS_SDK_ABI_MAJOR) + "." + std::to_string(GS_SDK_ABI_MINOR) +
                  " (graphsplit " GS_SDK_VERSION "). Rebuild the plugin.");
  }
  if (d->min_host_minor > GS_SDK_ABI_MINOR) {
    return refuse("it requires SDK ABI >= " + std::to_string(d->abi_major) + "." +
                  std::to_string(d->min_host_minor) + " (built with SDK " + plugin_sdk +
                  "); this host provides SDK ABI " + std::to_string(GS_SDK_ABI_MAJOR) + "." +
                  std::to_string(GS_SDK_ABI_MINOR) +
                  " (graphsplit " GS_SDK_VERSION "). Upgrade the host or rebuild.");
  }
  const std::string tag = d->abi_tag ? d->abi_tag : "";
  const std::string host = GS_ABI_TAG;
  for (const char* key : {"stdlib", "cxx11abi", "glibcxx_debug"}) {
    if (field(tag, key) != field(host, key)) {
      return refuse("its C++ ABI tag '" + tag + "' does not match the host's '" + host + "' (" + key +
                    " differs)");
    }
  }
  if (field(tag, "compiler") != field(host, "compiler")) {
    if (strict_abi_tag)
      return refuse("its compiler '" + field(tag, "compiler") + "' differs from the host's '" +
                    field(host, "compiler") + "' and strict_abi_tag is on");
    spdlog::warn("plugin {} was built with {}, the host with {}", path, field(tag, "compiler"),
                 field(host, "compiler"));
  }
  if (!d->name || !*d->name || !d->version) return refuse("the descriptor has no plugin name or version");
  if (d->n_components == 0 || !d->components) return refuse("it provides no components");
  for (uint32_t i = 0; i < d->n_components; ++i) {
    const gs_component_desc& c = d->components[i];
    if (c.kind != GS_ENGINE && c.kind != GS_PASS && c.kind != GS_PARTITIONER) {
      return refuse("component " + std::to_string(i) + " has unknown kind " + std::to_string(c.kind));
    }
    if (!c.name || !*c.name || !c.create || !c.destroy) {
      return refuse("component " + std::to_string(i) + " lacks a name, create or destroy");
    }
    if (c.n_options && !c.options)
      return refuse("component '" + std::string(c.name) + "' declares options but no table");
    for (uint32_t j = 0; j < i; ++j) {
      if (d->components[j].kind == c.kind && std::string_view(d->components[j].name) == c.name) {
        return refuse("it declares component '" + std::string(c.name) + "' twice");
      }
    }
  }
  return Status::ok();
}

}  // namespace

struct LoadedLibrary::Impl {
  boost::dll::shared_library library;
};

LoadedLibrary::~LoadedLibrary() = default;

std::string LoadedLibrary::label() const {
  return fs::path(path_).filename().string() + " " + desc_->version + ", SDK ABI " +
         std::to_string(desc_->abi_major) + "." + std::to_string(desc_->abi_minor);
}

const char* host_abi_tag() {
  return GS_ABI_TAG;
}

Status PluginLoader::load_file(const std::string& given, std::shared_ptr<const LoadedLibrary>* out) const {
  std::error_code ec;
  const fs::path path = fs::canonical(given, ec);
  if (ec) return Status::not_found(given + ": " + ec.message());
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Status::not_found(path.string() + ": cannot stat");
  std::lock_guard<std::mutex> lock(load_mutex());
  auto& table = loaded_table();
  if (auto it = table.find({st.st_dev, st.st_ino}); it != table.end()) {
    if (auto alive = it->second.seen.lock()) {
      *out = alive;
      return Status::ok();
    }
    table.erase(it);
  }

  // Pre-flight: read the export table without running any of the library's code. Not Boost.DLL's
  // library_info: in 1.74 it reads .symtab (absent from a stripped library) through whichever string table
  // comes last, so that it found an entry point only when the sections happened to be in a lucky order.
  std::vector<std::string> exports, entries;
  GS_RETURN_IF_ERROR(elf_exported_symbols(path, &exports));
  for (const std::string& s : exports) {
    if (s.rfind(kEntryPrefix, 0) == 0) entries.push_back(s);
  }
  const std::string wanted = GS_ENTRY_SYMBOL;
  if (std::find(entries.begin(), entries.end(), wanted) == entries.end()) {
    if (entries.empty()) {
      return Status::failed_precondition(
          "refusing plugin " + path.string() +
          ": not a graphsplit plugin (it exports no graphsplit_plugin_descriptor_v* symbol)");
    }
    std::string majors;
    for (const std::string& e : entries)
      majors += (majors.empty() ? "" : ", ") + e.substr(kEntryPrefix.size());
    return Status::failed_precondition(
        "refusing plugin " + path.string() + ": it was built for SDK ABI major " + majors +
        "; this host provides SDK ABI major " + std::to_string(GS_SDK_ABI_MAJOR) +
        " (graphsplit " GS_SDK_VERSION "). Rebuild the plugin.");
  }

  auto lib = std::shared_ptr<LoadedLibrary>(new LoadedLibrary());
  lib->path_ = path.string();
  lib->impl_ = std::make_unique<LoadedLibrary::Impl>();
  try {
    lib->impl_->library.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    std::string msg = "refusing plugin " + path.string() + ": dlopen failed: " + e.what();
    const std::string hint = hint_for(e.what());
    if (!hint.empty()) msg += "; " + hint;
    return Status::failed_precondition(msg);
  }
  using Entry = const gs_plugin_desc*();
  const gs_plugin_desc* desc = nullptr;
  try {
    desc = lib->impl_->library.get<Entry>(wanted)();
  } catch (const std::exception& e) {
    return Status::failed_precondition("refusing plugin " + path.string() + ": cannot call " + wanted + ": " +
                                       e.what());
  }
  GS_RETURN_IF_ERROR(validate(desc, path.string(), options_.strict_abi_tag));
  lib->desc_ = desc;
  table[{st.st_dev, st.st_ino}] = TableEntry{options_.unload_checked ? nullptr : lib, lib};
  *out = lib;
  return Status::ok();
}

Status PluginLoader::load(const std::string& name, std::shared_ptr<const LoadedLibrary>* out) const {
  const std::string file = "libgsplugin_" + name + ".so";
  std::string tried;
  int k = 0;
  for (const std::string& dir : options_.search_paths) {
    const fs::path candidate = fs::path(dir) / file;
    std::error_code ec;
    if (!fs::exists(candidate, ec)) {
      tried += "; " + std::to_string(++k) + ". " + candidate.string() + ": not found";
      continue;
    }
    Status s = load_file(candidate.string(), out);
    if (s.is_ok()) {
      if ((*out)->plugin_name() != name) {
        return Status::failed_precondition("plugin file " + candidate.string() + " declares plugin name '" +
                                           (*out)->plugin_name() + "', expected '" + name + "'");
      }
      return s;
    }
    tried += "; " + std::to_string(++k) + ". " + s.message();
    // A file that is present but broken is an error: falling through to another copy would hide it.
    return Status::failed_precondition("required plugin '" + name + "' could not be loaded; tried in order" +
                                       tried);
  }
  if (options_.search_paths.empty()) tried = ": no search paths configured";
  return Status::not_found("required plugin '" + name + "' could not be loaded; tried in order" + tried);
}

std::vector<std::string> PluginLoader::discover() const {
  std::vector<std::string> out;
  std::vector<std::pair<dev_t, ino_t>> seen;
  for (const std::string& dir : options_.search_paths) {
    std::error_code ec;
    std::vector<std::string> here;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string f = e.path().filename().string();
      if (f.rfind("libgsplugin_", 0) == 0 && f.size() > 3 && f.compare(f.size() - 3, 3, ".so") == 0) {
        here.push_back(e.path().string());
      }
    }
    std::sort(here.begin(), here.end());
    for (const std::string& p : here) {
      struct stat st {};
      if (::stat(p.c_str(), &st) != 0) continue;
      if (std::find(seen.begin(), seen.end(), std::make_pair(st.st_dev, st.st_ino)) != seen.end()) continue;
      seen.emplace_back(st.st_dev, st.st_ino);
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace graphsplit
