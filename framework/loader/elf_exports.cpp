#include "loader/elf_exports.h"

#include <elf.h>

#include <cstring>
#include <fstream>

namespace graphsplit {
namespace {

using sdk::Status;

class ElfFile {
 public:
  explicit ElfFile(const std::filesystem::path& path) : path_(path), in_(path, std::ios::binary) {
    in_.seekg(0, std::ios::end);
    size_ = in_ ? static_cast<uint64_t>(in_.tellg()) : 0;
  }
  bool opened() const { return static_cast<bool>(in_); }

  // Reads `n` bytes at `offset`; false when they lie outside the file.
  bool read(uint64_t offset, void* dst, uint64_t n) {
    if (offset > size_ || n > size_ - offset) return false;
    in_.seekg(static_cast<std::streamoff>(offset));
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    return static_cast<bool>(in_);
  }

  Status bad(const std::string& what) const {
    return Status::failed_precondition("refusing plugin " + path_.string() +
                                       ": not a loadable shared library (" + what + ")");
  }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  uint64_t size_ = 0;
};

bool exported(const Elf64_Sym& s) {
  const unsigned bind = ELF64_ST_BIND(s.st_info);
  return s.st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK) &&
         ELF64_ST_VISIBILITY(s.st_other) == STV_DEFAULT;
}

}  // namespace

Status elf_exported_symbols(const std::filesystem::path& path, std::vector<std::string>* out) {
  out->clear();
  ElfFile f(path);
  if (!f.opened()) return f.bad("cannot read the file");
  Elf64_Ehdr eh;
  if (!f.read(0, &eh, sizeof eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) return f.bad("not ELF");
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return f.bad("not a 64-bit little-endian ELF file");
  if (eh.e_type != ET_DYN) return f.bad("not a shared object");
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) return f.bad("no section headers");
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  if (!f.read(eh.e_shoff, sections.data(), sizeof(Elf64_Shdr) * sections.size()))
    return f.bad("section headers past the end of the file");
  for (const Elf64_Shdr& sh : sections) {
    if (sh.sh_type != SHT_DYNSYM) continue;
    if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= sections.size())
      return f.bad("malformed dynamic symbol table");
    const Elf64_Shdr& strtab = sections[sh.sh_link];
    std::vector<Elf64_Sym> symbols(sh.sh_size / sizeof(Elf64_Sym));
    std::string text(strtab.sh_size, '\0');
    if (!f.read(sh.sh_offset, symbols.data(), symbols.size() * sizeof(Elf64_Sym)) ||
        !f.read(strtab.sh_offset, text.data(), text.size()))
      return f.bad("dynamic symbol table past the end of the file");
    for (const Elf64_Sym& s : symbols) {
      if (!exported(s) || s.st_name >= text.size()) continue;
      const char* name = text.data() + s.st_name;
      out->emplace_back(name, strnlen(name, text.size() - s.st_name));
    }
    return Status::ok();
  }
  return Status::ok();  // no dynamic symbols: it exports nothing
}

}  // namespace graphsplit
