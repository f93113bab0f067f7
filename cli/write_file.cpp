#include "write_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "libsim/sweep/sweep.hpp"  // OutputError

namespace fleetsim::cli {

namespace fs = std::filesystem;

namespace {

// errno of the first failure, 0 on success
int write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += size_t(n);
  }
  return 0;
}

int write_in_place(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return errno;
  int err = write_all(fd, text);
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}

// The file `path` finally names, following its links one by one; empty where a link leads into
// /proc or /dev (/dev/stdout is /proc/self/fd/1: the file behind it is the shell's redirect, which
// only a write through the link reaches) or the chain does not end.
std::string resolve_links(const std::string& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    const fs::path abs = fs::absolute(p, ec).lexically_normal();
    if (ec) return {};
    const std::string s = abs.string();
    if (s.rfind("/proc/", 0) == 0 || s.rfind("/dev/", 0) == 0) return {};
    if (!fs::is_symlink(fs::symlink_status(abs, ec))) return s;
    fs::path target = fs::read_symlink(abs, ec);
    if (ec) return {};
    p = target.is_absolute() ? target : abs.parent_path() / target;
  }
  return {};
}

}  // namespace

void write_file_whole(const std::string& path, const std::string& text, const std::string& what) {
  auto fail = [&](int err) {
    throw OutputError(fmt::format("{}: error: writing {} failed: {}", path, what, std::strerror(err)), err);
  };
  auto in_place = [&] {
    if (const int err = write_in_place(path, text)) fail(err);
  };
  const std::string target = resolve_links(path);
  if (target.empty()) return in_place();
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  if (exists && (!S_ISREG(st.st_mode) || st.st_nlink > 1 || ::access(target.c_str(), W_OK) != 0)) return in_place();
  if (!exists && errno != ENOENT) return in_place();  // (the open says why it cannot)

  const fs::path dest = target;
  std::string tmpl = (dest.parent_path() / ("." + dest.filename().string() + ".XXXXXX")).string();
  std::vector<char> name(tmpl.begin(), tmpl.end());
  name.push_back('\0');
  const int fd = ::mkstemp(name.data());
  if (fd < 0) return in_place();  // a folder that takes no new file: the file itself may be writable
  const std::string tmp = name.data();
  auto drop = [&](int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    return err;
  };
  // the mode and owner the file had (a new one: what open(2) would give under the umask)
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
    if ((st.st_uid != ::geteuid() || st.st_gid != ::getegid()) && ::fchown(fd, st.st_uid, st.st_gid) != 0) {
      drop(0);
      return in_place();  // its owner could not be kept: written as the user writes it, in place
    }
  } else {
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd, mode) != 0) fail(drop(errno));
  if (const int err = write_all(fd, text)) fail(drop(err));
  // on disk before the name moves, so that a crash after the rename cannot leave an empty file
  if (::fsync(fd) != 0) fail(drop(errno));
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(err);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(err);
  }
}

}  // namespace fleetsim::cli
