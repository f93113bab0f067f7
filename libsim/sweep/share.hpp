// Sweeps: one run serves every configuration whose engine limits would not have changed it.
// A continuous pool's max_num_seqs, max_batched_tokens and KV blocks (and with them the KV
// watermark and the memory the engine reserves) enter the simulation only through comparisons;
// each run records how near every comparison came to going the other way (Tally::limits). A
// configuration whose parameters differ from a run's only in those limits, each by less than the
// room the run left, takes every comparison the same way: its run would be that run, bit for bit.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/params.hpp"
#include "core/tally.hpp"

namespace fleetsim {

// `p` with the limits the rule covers blanked: two configurations whose blanked parameters are
// byte for byte equal differ at most in those limits.
std::unique_ptr<SimParams> without_limits(const SimParams& p);

// Whether the run of `ran` that left `use` (Tally::limits) is also the run of `other`, whose
// parameters without limits equal those of `ran` (docs/model.md, "Sweeps, replications and backends").
bool limits_serve(const SimParams& ran, const RunLimits& use, const SimParams& other);

// Whether some limit of the run of `ran` that left `use` never decided: else it serves no
// configuration with other limits, and need not be kept.
bool limits_left_room(const SimParams& ran, const RunLimits& use);

// Both checks: whether `t`, a replication's tally of `ran`, is also that replication's of `other`.
bool run_serves(const SimParams& ran, const Tally& t, const SimParams& other);

// Configurations of one stretch a thread takes at most.
constexpr size_t kMaxLimitStretch = 256;

// Whether a sweep parameter's dotted path names an engine limit the rule can share across.
bool is_limit_path(const std::string& path);

// Stretches of the positions [0, n) whose configurations agree on every parameter but the limits
// (`key(pos)` names the rest), cut at `max_len`: a sweep runs each stretch on one thread, most
// generous limits first, so that later configurations find a run to share.
std::vector<std::pair<size_t, size_t>> limit_stretches(size_t n, const std::function<std::string(size_t)>& key,
                                                       size_t max_len);

}  // namespace fleetsim
