#include "engine/external/shared_library.hpp"

#include <dlfcn.h>

#include <cstdint>
#include <cstring>
#include <fstream>

#include "common/errors.hpp"

namespace moe::external {

namespace {
// What the file's ELF header says it is: not ELF, an object other than ET_DYN (an executable
// that is not position-independent, a relocatable object), or ET_DYN, a shared object or a
// position-independent executable; `interpreter` tells those two apart where dlopen refuses
// the latter (a PT_INTERP program header: 64-bit files only, which is what loads here).
enum class ElfKind { not_elf, shared_object, other };
struct ElfFacts {
  ElfKind kind = ElfKind::not_elf;
  bool interpreter = false;
};
ElfFacts read_elf(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  unsigned char header[64] = {};  // the ELF64 header
  in.read(reinterpret_cast<char*>(header), sizeof header);
  ElfFacts facts;
  if (in.gcount() < 18 || std::memcmp(header, "\x7f" "ELF", 4) != 0) return facts;
  const bool little = header[5] == 1;  // EI_DATA: ELFDATA2LSB
  auto field = [&](const unsigned char* at, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t{at[little ? i : bytes - 1 - i]} << (8 * i);
    return v;
  };
  facts.kind = field(header + 16, 2) == 3 ? ElfKind::shared_object : ElfKind::other;  // e_type ET_DYN
  if (header[4] != 2 || in.gcount() < 64) return facts;  // EI_CLASS: ELFCLASS64 only
  const std::uint64_t phoff = field(header + 32, 8), phentsize = field(header + 54, 2), phnum = field(header + 56, 2);
  for (std::uint64_t i = 0; i < phnum && phentsize >= 4; ++i) {
    unsigned char type[4] = {};
    in.clear();
    in.seekg(static_cast<std::streamoff>(phoff + i * phentsize));
    if (!in.read(reinterpret_cast<char*>(type), 4)) break;
    if (field(type, 4) == 3) facts.interpreter = true;  // PT_INTERP
  }
  return facts;
}
}  // namespace

SharedLibrary::SharedLibrary(const std::filesystem::path& file, const std::string& what) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    throw UsageError(what + ": no such file");
  if (!std::filesystem::is_regular_file(file, ec))
    throw UsageError(what + ": not a regular file (give the adapter's .so file)");
  const ElfFacts elf = read_elf(file);
  switch (elf.kind) {
    case ElfKind::not_elf:
      throw UsageError(what + ": not a shared library (no ELF header; give the adapter's .so file)");
    case ElfKind::other:
      throw UsageError(what + ": an ELF file but not a shared library (give the adapter's .so file)");
    case ElfKind::shared_object: break;
  }
  // A path without a slash would make dlopen search the library path instead of this file.
  const std::string path = file.has_parent_path() ? file.string() : "./" + file.string();
  dlerror();
  // Never unmapped (RTLD_NODELETE): an adapter's own libraries (cuBLAS, a CUDA runtime) keep
  // static state that their unload would leave dangling, as the cuBLAS peer's loader does.
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle_) {
    const char* why = dlerror();
    const std::string dlopen_said = why ? why : "dlopen failed";
    // A program with an interpreter that does not load is an executable given by mistake
    // (glibc refuses position-independent executables), not a fault of this machine.
    if (elf.interpreter)
      throw UsageError(what + ": an executable, not a shared library (give the adapter's .so file; " + dlopen_said + ")");
    throw EnvironmentError(what + ": cannot be loaded on this machine: " + dlopen_said);
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
