// Request traces and CSV columns, for trace replay and empirical length distributions.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fleetsim {

struct TraceData {
  std::vector<double> t_s;  // arrival times, seconds, non-decreasing
  std::vector<int32_t> prompt, output;
  // Tokens at the start of each prompt that an unbounded prefix cache would already hold: the
  // leading blocks whose hashes appeared in earlier requests of the trace, capped at prompt − 1.
  // Filled for traces that carry block hashes (Mooncake); empty otherwise.
  std::vector<int32_t> cached_prefix;
  // The block hashes themselves, renumbered 0, 1, ... in order of first appearance: request i's
  // are blocks[block_off[i], block_off[i + 1]), each of block_tokens tokens (empty without hashes).
  std::vector<int32_t> blocks;
  std::vector<int64_t> block_off;
  int32_t block_tokens = 0;
  // Conversations, read from the block hashes: parent[i] is the earlier request whose answer
  // request i follows up (-1: none), child[i] the one request that follows up i (-1: none). i
  // follows up p when i's blocks begin with all of p's but its last (the partial block the answer
  // was appended to), those are at least 2 blocks (every Mooncake request begins with the same
  // first block), i's prompt holds at least p's prompt and answer, and i arrived later; of several
  // such p, the one sharing most blocks, then the latest, not already followed up. Empty without
  // hashes.
  std::vector<int32_t> parent, child;
  int64_t follow_ups = 0;       // requests with a parent
  double prefix_hit_share = 0;  // sum of cached_prefix / sum of prompt (tokens); 0 without hashes
  std::string layout;           // which format or column layout was recognised
  int64_t rows = 0;             // data rows read, including filtered-out and skipped ones
  int64_t skipped = 0;          // rows dropped as unusable (failed requests, empty prompts)
  std::string skipped_reason;   // what the skipped rows were, "" when none
};

struct TraceOptions {
  // BurstGPT: keep only rows whose Model is exactly this ("ChatGPT", "GPT-4"); "" keeps all.
  // An error for any other format.
  std::string model_filter;
  // Mooncake: tokens per hash_ids block (512 in the published traces).
  int32_t block_tokens = 512;
};

// Recognised formats. CSV, by header:
//   timestamp_s,prompt_tokens,output_tokens               (native)
//   arrived_at,num_prefill_tokens,num_decode_tokens       (Azure LLM 2023, relative seconds)
//   TIMESTAMP,ContextTokens,GeneratedTokens               (Azure LLM 2023 original, wall clock)
//   Timestamp,Model,Request tokens,Response tokens,...    (BurstGPT; failed requests, with
//                                                          Response tokens 0, are skipped and
//                                                          counted, as are rows with Request tokens 0)
// JSONL (first non-blank character '{'), one object per line:
//   {"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [...]}   (Mooncake)
// Wall-clock (Azure original), BurstGPT and Mooncake timestamps are rebased to the first kept
// request. A UTF-8 byte-order mark is accepted; CSV fields may be quoted ("a,b", "say ""hi""").
// Timestamps must not go backwards. Throws InputError with file:line.
TraceData load_trace(const std::string& path, const TraceOptions& opt = {});

// The same as load_trace(path) with default options, for existing callers.
TraceData load_trace_csv(const std::string& path);

// One numeric column of a CSV file with a header row.
std::vector<double> load_csv_column(const std::string& path, const std::string& column);

}  // namespace fleetsim
