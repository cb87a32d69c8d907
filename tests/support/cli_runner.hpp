#pragma once
// Runs the built moebench binary (MOEBENCH_BINARY) the way a user or a CI script does, and
// captures its exit code, standard output and standard error.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace moe::test {

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fresh folder under the system temp dir for one test's files.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("moebench-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// `command` is a shell command line; stdout and stderr go to files next to each other.
inline CliResult run_shell(const std::string& command) {
  static int counter = 0;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("moebench-cli-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto out = dir / (std::to_string(++counter) + ".out");
  const auto err = dir / (std::to_string(counter) + ".err");
  const int status =
      std::system((command + " >" + quote(out.string()) + " 2>" + quote(err.string())).c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(out);
  r.err = read_text(err);
  return r;
}

// The binary under test: $MOEBENCH_BINARY wins, so tests run from a copied build too.
inline std::string moebench_binary() {
  const char* env = std::getenv("MOEBENCH_BINARY");
  return env ? env : MOEBENCH_BINARY;
}

// moebench with arguments (each quoted for the shell).
template <class... Args>
CliResult moebench(const Args&... args) {
  std::string cmd = quote(moebench_binary());
  ((cmd += " " + quote(std::string(args))), ...);
  return run_shell(cmd);
}

// moebench with an argument string split by the shell (for tables of command lines).
inline CliResult moebench_line(const std::string& args) {
  return run_shell(quote(moebench_binary()) + " " + args);
}

inline std::string data_file(const std::string& relative) {
  return std::string(MOEBENCH_TEST_DATA_DIR) + "/" + relative;
}

}  // namespace moe::test
