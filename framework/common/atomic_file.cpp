#include "common/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace graphsplit {

namespace {

// Writes every piece, a batch of pieces per system call (a model's subgraphs are tens of thousands of
// pieces).
bool write_all(int fd, const std::vector<std::string_view>& pieces) {
  std::vector<iovec> batch;
  size_t next = 0, skip = 0;  // the first piece not fully written, and how much of it is
  while (next < pieces.size()) {
    batch.clear();
    for (size_t i = next; i < pieces.size() && batch.size() < IOV_MAX; ++i) {
      const size_t from = i == next ? skip : 0;
      batch.push_back({const_cast<char*>(pieces[i].data() + from), pieces[i].size() - from});
    }
    const ssize_t n = ::writev(fd, batch.data(), static_cast<int>(batch.size()));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0 && std::any_of(batch.begin(), batch.end(), [](const iovec& v) { return v.iov_len > 0; })) {
      errno = EIO;  // no progress: never loop on it
      return false;
    }
    auto left = static_cast<size_t>(n);
    while (next < pieces.size() && left >= pieces[next].size() - skip) {
      left -= pieces[next].size() - skip;
      skip = 0;
      ++next;
    }
    skip += left;
  }
  return true;
}

}  // namespace

sdk::Status write_file_atomically(const std::string& path, std::string_view bytes) {
  return write_file_atomically(path, std::vector<std::string_view>{bytes});
}

sdk::Status write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces) {
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
  if (!write_all(fd, pieces)) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    return sdk::Status::resource_exhausted(path + ": write failed: " + std::strerror(err));
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
