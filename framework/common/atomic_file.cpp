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

AtomicFile::~AtomicFile() {
  discard();
}

void AtomicFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
  fd_ = -1;
}

sdk::Status AtomicFile::open(const std::string& path) {
  namespace fs = std::filesystem;
  discard();
  const fs::path target(path);
  std::error_code ec;
  if (fs::is_directory(target, ec)) return sdk::Status::invalid_argument(path + ": is a directory");
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    return sdk::Status::invalid_argument(path + ": directory '" + dir.string() + "' does not exist");
  }
  std::string tmp = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
  const int fd = mkstemp(tmp.data());
  if (fd < 0)
    return sdk::Status::invalid_argument(path + ": cannot create a file here: " + std::strerror(errno));
  path_ = path;
  tmp_ = std::move(tmp);
  fd_ = fd;
  return sdk::Status::ok();
}

sdk::Status AtomicFile::append(const std::vector<std::string_view>& pieces) {
  if (fd_ < 0) return sdk::Status::internal("AtomicFile: append without a successful open");
  if (!write_all(fd_, pieces)) {
    const int err = errno;
    discard();
    return sdk::Status::resource_exhausted(path_ + ": write failed: " + std::strerror(err));
  }
  return sdk::Status::ok();
}

sdk::Status AtomicFile::commit() {
  if (fd_ < 0) return sdk::Status::internal("AtomicFile: commit without a successful open");
  // mkstemp creates 0600; outputs get the usual permissions.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd_, 0666 & ~mask);
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return sdk::Status::resource_exhausted(path_ + ": flush failed: " + std::strerror(err));
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    return sdk::Status::invalid_argument(path_ + ": cannot replace the file: " + std::strerror(err));
  }
  return sdk::Status::ok();
}

sdk::Status write_file_atomically(const std::string& path, std::string_view bytes) {
  return write_file_atomically(path, std::vector<std::string_view>{bytes});
}

sdk::Status write_file_atomically(const std::string& path, const std::vector<std::string_view>& pieces) {
  AtomicFile file;
  GS_RETURN_IF_ERROR(file.open(path));
  GS_RETURN_IF_ERROR(file.append(pieces));
  return file.commit();
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
