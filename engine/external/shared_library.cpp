#include "engine/external/shared_library.hpp"

#include <dlfcn.h>

#include <cstring>
#include <fstream>

#include "common/errors.hpp"

namespace moe::external {

namespace {
// What the file's ELF header says it is.
enum class ElfKind { not_elf, shared_object, other };
ElfKind elf_kind(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char header[18] = {};  // e_ident (16 bytes), then e_type
  in.read(reinterpret_cast<char*>(header), sizeof header);
  if (in.gcount() < 18 || std::memcmp(header, "\x7f" "ELF", 4) != 0) return ElfKind::not_elf;
  const bool little = header[5] == 1;  // EI_DATA: ELFDATA2LSB
  const unsigned type = little ? header[16] | header[17] << 8 : header[16] << 8 | header[17];
  // ET_DYN: a shared object (or a position-independent executable, which dlopen then names).
  return type == 3 ? ElfKind::shared_object : ElfKind::other;
}
}  // namespace

SharedLibrary::SharedLibrary(const std::filesystem::path& file, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw UsageError(what + ": no such file");
  if (!std::filesystem::is_regular_file(file, ec))
    throw UsageError(what + ": not a regular file (give the adapter's .so file)");
  switch (elf_kind(file)) {
    case ElfKind::not_elf:
      throw UsageError(what + ": not a shared library (no ELF header; give the adapter's .so file)");
    case ElfKind::other:
      throw UsageError(what + ": an ELF file but not a shared library (give the adapter's .so file)");
    case ElfKind::shared_object: break;
  }
  // A path without a slash would make dlopen search the library path instead of this file.
  const std::string path = file.has_parent_path() ? file.string() : "./" + file.string();
  dlerror();
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    throw EnvironmentError(what + ": cannot be loaded on this machine: " +
                           (why ? why : "dlopen failed"));
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_) dlclose(handle_);
}

void* SharedLibrary::symbol(const char* name) const {
  dlerror();
  return dlsym(handle_, name);
}

}  // namespace moe::external
