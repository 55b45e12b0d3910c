// Running a command-line tool from a test: exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace graphsplit::testing {

struct Result {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `command` through the shell with stdout and stderr captured in `scratch_dir` (files removed after).
inline Result run_command(const std::string& command, const std::filesystem::path& scratch_dir) {
  const auto out = scratch_dir / "stdout.txt", err = scratch_dir / "stderr.txt";
  const std::string cmd = command + " >" + out.string() + " 2>" + err.string();
  Result r;
  const int status = std::system(cmd.c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  std::filesystem::remove(out);
  std::filesystem::remove(err);
  return r;
}

}  // namespace graphsplit::testing
