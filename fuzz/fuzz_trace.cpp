// libFuzzer harness: the input is a trace file (CSV: native, Azure LLM 2023, BurstGPT; or
// Mooncake JSONL) -> load_trace, and a CSV column -> load_csv_column. An InputError is the
// expected answer to a bad file. A trace that loads must keep load_trace's promises (finite,
// non-decreasing arrival times from 0, counts in range, columns of one length); a broken
// promise aborts, and is a finding like a crash.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "libsim/base/error.hpp"
#include "libsim/input/trace.hpp"

namespace {

// The input's file: in memory where possible (rewriting a file on ext4 on every execution costs
// milliseconds of flushing); removed at exit.
struct TempFile {
  std::string path;
  TempFile() {
    const char* tmp = std::getenv("TMPDIR");
    const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : tmp && *tmp ? tmp : "/tmp";
    path = dir + "/fleetsim-fuzz-trace-" + std::to_string(getpid()) + ".txt";
  }
  ~TempFile() { std::remove(path.c_str()); }
};

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_trace: broken promise: %s\n", what);
    std::abort();
  }
}

void check(const fleetsim::TraceData& t, bool hashes) {
  const size_t n = t.t_s.size();
  require(n > 0, "a loaded trace has at least one request");
  require(t.prompt.size() == n && t.output.size() == n, "columns of one length");
  require(t.cached_prefix.size() == (hashes ? n : 0), "cached_prefix filled for Mooncake only");
  require(t.t_s[0] >= 0, "arrival times start at or after 0");
  for (size_t i = 0; i < n; ++i) {
    require(std::isfinite(t.t_s[i]), "arrival times are finite");
    require(i == 0 || t.t_s[i] >= t.t_s[i - 1], "arrival times do not go backwards");
    require(t.prompt[i] >= 0 && t.prompt[i] <= 100000000, "prompt tokens in [0, 1e8]");
    require(t.output[i] >= 0 && t.output[i] <= 100000000, "output tokens in [0, 1e8]");
    if (hashes) require(t.cached_prefix[i] >= 0 && t.cached_prefix[i] < t.prompt[i], "cached prefix in [0, prompt)");
  }
  require(t.prefix_hit_share >= 0 && t.prefix_hit_share <= 1, "prefix hit share in [0, 1]");
  require(t.rows >= int64_t(n) && t.skipped >= 0 && t.skipped <= t.rows, "row counts consistent");
  require(!t.layout.empty(), "a layout is named");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace fleetsim;
  static const TempFile file;
  const std::string& path = file.path;
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) std::abort();
    if (size && std::fwrite(data, 1, size, f) != size) std::abort();
    std::fclose(f);
  }
  try {
    const TraceData t = load_trace(path);
    const bool mooncake = t.layout.find("Mooncake") != std::string::npos;
    check(t, mooncake);
    // the options: a BurstGPT model filter, small Mooncake blocks
    TraceOptions o;
    if (t.layout.find("BurstGPT") != std::string::npos) o.model_filter = "ChatGPT";
    if (mooncake) o.block_tokens = 16;
    if (!o.model_filter.empty() || mooncake) check(load_trace(path, o), mooncake);
  } catch (const InputError& e) {
    (void)e.one_line();
    (void)e.caret();
  }
  try {
    for (double v : load_csv_column(path, "prompt_tokens")) (void)v;
  } catch (const InputError& e) {
    (void)e.one_line();
    (void)e.caret();
  }
  return 0;
}
