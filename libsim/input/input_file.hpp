// Reading an input file whole, at the edge: every way it can fail is an InputError naming the
// file, what it should have been and why not, so no input path ends in a raw C++ exception.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fleetsim {

// Scenarios, budgets and profiles are hand-written YAML; shards and traces can be large.
constexpr uint64_t kMaxTextInputBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxDataInputBytes = uint64_t(4) << 30;

// The whole of a regular file or a pipe, at most max_bytes. Throws InputError naming `what`
// (e.g. "scenario file") for a path that does not resolve (missing, too long, a symlink loop),
// a directory, a device (/dev/zero would never end), a file over the limit, or a read error.
std::string read_text_file(const std::string& path, const char* what, uint64_t max_bytes = kMaxDataInputBytes);

// The input (as given) that `output` names, by any path; "" if none, or for "" and "-".
std::string input_named_by(const std::string& output, const std::vector<std::string>& inputs);

// An output path that names one of the inputs (the same file, by any path) would overwrite it
// with the command's own result: an InputError naming the output, the flag that gave it and the
// input. Paths that do not exist yet, or that are empty or "-" (standard output), pass.
void refuse_overwriting_input(const std::string& output, const char* flag, const std::vector<std::string>& inputs);

}  // namespace fleetsim
