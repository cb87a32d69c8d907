#pragma once
// A shared library opened with dlopen and closed when the object dies (RAII). What the file is
// for is the caller's business (engine/external/adapter_library.hpp checks an engine adapter).
#include <filesystem>
#include <string>

namespace moe::external {

class SharedLibrary {
 public:
  // Opens `file` with RTLD_NOW | RTLD_LOCAL: every symbol it needs is bound now, so a missing
  // dependency is reported here, and nothing it defines is seen by other libraries. Raises
  // UsageError for a file that is missing, not a regular file, not an ELF shared object or an
  // executable, EnvironmentError (with dlerror's text) for a shared object this machine cannot
  // load (a dependency missing, another architecture). `what` names the file in messages
  // ("--engine './x.so'").
  SharedLibrary(const std::filesystem::path& file, const std::string& what);
  ~SharedLibrary();
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // The address of `name`, or null when the library does not define it.
  void* symbol(const char* name) const;

 private:
  void* handle_ = nullptr;
};

}  // namespace moe::external
