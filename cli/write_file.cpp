#include "write_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "libsim/sweep/sweep.hpp"  // OutputError

namespace fleetsim::cli {

namespace {

// errno after a failed write, or EIO where the library left none
int write_to(const std::string& path, const std::string& text) {
  errno = 0;
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!(f << text) || !f.flush()) return errno ? errno : EIO;
  f.close();
  return f ? 0 : (errno ? errno : EIO);
}

}  // namespace

void write_file_whole(const std::string& path, const std::string& text, const std::string& what) {
  auto fail = [&](int err) {
    throw OutputError(fmt::format("{}: error: writing {} failed: {}", path, what, std::strerror(err)), err);
  };
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  const bool in_place = std::filesystem::exists(st) && !std::filesystem::is_regular_file(st);
  if (in_place) {
    if (const int err = write_to(path, text)) fail(err);
    return;
  }
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  if (const int err = write_to(tmp, text)) {
    std::remove(tmp.c_str());
    // a folder that takes no new file, where the file itself is writable: in place, as before
    if ((err == EACCES || err == EROFS || err == EPERM) && std::filesystem::exists(st)) {
      if (const int err2 = write_to(path, text)) fail(err2);
      return;
    }
    fail(err);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail(ec.value());
  }
}

}  // namespace fleetsim::cli
