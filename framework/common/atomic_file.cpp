#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace graphsplit {

sdk::Status write_file_atomically(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) return sdk::Status::invalid_argument(path + ": is a directory");
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    return sdk::Status::invalid_argument(path + ": directory '" + dir.string() + "' does not exist");
  }
  std::string tmp = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  int fd = mkstemp(tmp.data());
  if (fd < 0)
    return sdk::Status::invalid_argument(path + ": cannot create a file here: " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return sdk::Status::resource_exhausted(path + ": write failed: " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  // mkstemp creates 0600; outputs get the usual permissions.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return sdk::Status::resource_exhausted(path + ": flush failed: " + std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return sdk::Status::invalid_argument(path + ": cannot replace the file: " + std::strerror(err));
  }
  return sdk::Status::ok();
}

sdk::Status read_file(const std::string& path, std::string* bytes, uint64_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return sdk::Status::not_found(path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) return sdk::Status::invalid_argument(path + ": is a directory");
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return sdk::Status::resource_exhausted(path + ": file of " + std::to_string(st.st_size) +
                                           " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return sdk::Status::not_found(path + ": cannot open: " + std::strerror(errno));
  bytes->resize(static_cast<size_t>(st.st_size));
  in.read(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  if (static_cast<size_t>(in.gcount()) != bytes->size()) {
    return sdk::Status::invalid_argument(path + ": short read");
  }
  return sdk::Status::ok();
}

}  // namespace graphsplit
