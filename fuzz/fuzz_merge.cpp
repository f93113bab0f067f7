// libFuzzer harness: the input is one or more sweep shard documents (JSON) separated by a line
// "---" -> parse_json_located, merge_sweeps and every output format. An InputError is the
// expected answer to bad shards. A merged document must itself merge, alone, into the same
// document (it is the whole sweep, shard 0 of 1); if not, the harness aborts: a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "libsim/base/error.hpp"
#include "libsim/sweep/sweep.hpp"

namespace {

constexpr const char* kSeparator = "\n---\n";
constexpr size_t kFuzzShards = 4;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetsim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t next = text.find(kSeparator, at);
    if (next == std::string::npos || parts.size() + 1 == kFuzzShards) {
      parts.push_back(text.substr(at));
      break;
    }
    parts.push_back(text.substr(at, next - at));
    at = next + std::char_traits<char>::length(kSeparator);
  }
  Json merged;
  try {
    std::vector<std::pair<std::string, Json>> shards;
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string file = "shard-" + std::to_string(i) + ".json";
      shards.emplace_back(file, parse_json_located(parts[i], file));
    }
    merged = merge_sweeps(shards);
  } catch (const InputError& e) {
    (void)e.one_line();
    (void)e.caret();
    return 0;
  }
  const std::string dumped = merged.dump(2);
  (void)format_sweep_table(merged);
  (void)format_sweep_table(merged, 3);
  (void)sweep_to_csv(merged);
  // the merged document, written out and read back, is a complete sweep that merges to itself
  try {
    const Json again = merge_sweeps({{"merged.json", parse_json_located(dumped, "merged.json")}});
    if (again.dump(2) != dumped) {
      std::fprintf(stderr, "fuzz_merge: merging the merged document alone changed it\n");
      std::abort();
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "fuzz_merge: the merged document does not merge: %s\n", e.one_line().c_str());
    std::abort();
  }
  return 0;
}
