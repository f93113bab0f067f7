// Request traces and CSV columns, for trace replay and empirical length distributions.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fleetsim {

struct TraceData {
  std::vector<double> t_s;  // arrival times, seconds, non-decreasing
  std::vector<int32_t> prompt, output;
  std::string layout;  // which column layout was recognised
};

// Recognised layouts (by header):
//   timestamp_s,prompt_tokens,output_tokens               (native)
//   arrived_at,num_prefill_tokens,num_decode_tokens       (Azure LLM 2023, relative seconds)
//   TIMESTAMP,ContextTokens,GeneratedTokens               (Azure LLM 2023 original, wall clock)
// Wall-clock timestamps are rebased to the first request. Throws InputError with file:line.
TraceData load_trace_csv(const std::string& path);

// One numeric column of a CSV file with a header row.
std::vector<double> load_csv_column(const std::string& path, const std::string& column);

}  // namespace fleetsim
