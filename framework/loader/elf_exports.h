// The names a shared library exports, read from its file without loading it (the loader's pre-flight).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "graphsplit/sdk/status.h"

namespace graphsplit {

// Defined, default-visibility global and weak symbols of the dynamic symbol table (.dynsym, named through the
// string table it links to): what dlsym can find. Works on stripped libraries, which have no .symtab. An
// error names the file and what is wrong with it.
sdk::Status elf_exported_symbols(const std::filesystem::path& path, std::vector<std::string>* out);

}  // namespace graphsplit
