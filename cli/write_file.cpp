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

// The file `path` finally names, following its links one by one, each hop's folder resolved by
// the kernel's rules (realpath: a linked folder, then its ".."); empty where a hop leads into /proc
// or /dev (/dev/stdout is /proc/self/fd/1: the file behind it is the shell's redirect, which only a
// write through the link reaches), its folder does not resolve, or the chain does not end.
std::string resolve_links(const std::string& path) {
  fs::path p = path;
  for (int hops = 0; hops < 40; ++hops) {
    std::error_code ec;
    const fs::path abs = fs::absolute(p, ec);
    if (ec || !abs.has_filename()) return {};
    const fs::path dir = fs::canonical(abs.parent_path(), ec);
    if (ec) return {};
    const fs::path at = dir / abs.filename();
    const std::string s = at.string();
    if (s.rfind("/proc/", 0) == 0 || s.rfind("/dev/", 0) == 0 || s == "/proc" || s == "/dev") return {};
    if (!fs::is_symlink(fs::symlink_status(at, ec))) return s;
    const fs::path target = fs::read_symlink(at, ec);
    if (ec) return {};
    p = target.is_absolute() ? target : dir / target;
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
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return in_place();  // a folder that takes no new file: the file itself may be writable
  const std::string tmp = name.data();
  // Where the new file cannot be made what the old one was (its owner or mode, on a file system
  // that keeps neither), or cannot replace it (a file mounted on its own, as a container's volume
  // of one file is), the file is written in place instead.
  auto give_up = [&] {
    ::close(fd);
    ::unlink(tmp.c_str());
    in_place();
  };
  auto drop = [&](int err) {
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(err);
  };
  mode_t mode = 0;
  if (exists) {
    mode = st.st_mode & 07777;
    struct stat made {};  // (a folder's setgid bit gives the new file the folder's group)
    if (::fstat(fd, &made) != 0) return drop(errno);
    if ((made.st_uid != st.st_uid || made.st_gid != st.st_gid) && ::fchown(fd, st.st_uid, st.st_gid) != 0)
      return give_up();
  } else {  // what open(2) would give under the umask
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd, mode) != 0) return give_up();
  if (const int err = write_all(fd, text)) return drop(err);
  // on disk before the name moves, so that a crash after the rename cannot leave an empty file
  if (::fsync(fd) != 0) return drop(errno);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(err);
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    if (err == EBUSY || err == EXDEV || err == EPERM || err == EACCES) return in_place();
    fail(err);
  }
}

}  // namespace fleetsim::cli
