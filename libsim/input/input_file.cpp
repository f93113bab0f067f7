#include "input/input_file.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "base/error.hpp"

namespace fleetsim {

namespace {

std::string size_text(uint64_t bytes) {
  return bytes >= (uint64_t(1) << 30) ? fmt::format("{} GiB", bytes >> 30) : fmt::format("{} MiB", bytes >> 20);
}

}  // namespace

std::string read_text_file(const std::string& path, const char* what, uint64_t max_bytes) {
  const Location at{path, 0, 0, ""};
  if (path.empty()) throw InputError(at, fmt::format("an empty path names no {}", what));
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw InputError(at,
                     fmt::format("cannot open {} ({}; does it exist and is it readable?)", what, std::strerror(errno)));
  if (S_ISDIR(st.st_mode)) throw InputError(at, fmt::format("is a directory, not a {}", what));
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
    throw InputError(at, fmt::format("not a regular file or a pipe (a {} is expected)", what));
  const auto too_large = [&] {
    return InputError(at, fmt::format("larger than {}, more than a {} can be", size_text(max_bytes), what));
  };
  if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > max_bytes) throw too_large();
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f)
    throw InputError(at,
                     fmt::format("cannot open {} ({}; does it exist and is it readable?)", what, std::strerror(errno)));
  std::string text;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) {
    if (text.size() + n > max_bytes) {  // a pipe has no size to check up front
      std::fclose(f);
      throw too_large();
    }
    text.append(buf, n);
  }
  const bool failed = std::ferror(f);
  const int err = errno;
  std::fclose(f);
  if (failed) throw InputError(at, fmt::format("cannot read {}: {}", what, std::strerror(err)));
  return text;
}

std::string input_named_by(const std::string& output, const std::vector<std::string>& inputs) {
  if (output.empty() || output == "-") return "";
  for (const std::string& in : inputs) {
    if (in.empty()) continue;
    std::error_code ec;
    if (std::filesystem::equivalent(output, in, ec) && !ec) return in;
  }
  return "";
}

void refuse_overwriting_input(const std::string& output, const char* flag, const std::vector<std::string>& inputs) {
  const std::string in = input_named_by(output, inputs);
  if (!in.empty())
    throw InputError(Location{output, 0, 0, ""},
                     fmt::format("{} names an input of this command ({}): writing there would overwrite it", flag, in));
}

}  // namespace fleetsim
