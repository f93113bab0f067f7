// Internal to the scenario loader: the section parsers build() (scenario.cpp) calls, each in the
// file named beside it.
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "input/scenario.hpp"
#include "input/yaml_node.hpp"

namespace fleetsim::detail {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// scenario.cpp: the scenario from its text, with overrides applied (ScenarioSource calls it)
Scenario load_from(const std::string& text, Source src, const std::vector<Override>& overrides);

// scenario_dist.cpp: length distributions
// (with `seconds`, values are times >= 0, not token counts >= 1: think times)
DistSpec parse_dist(const N& n, const std::string& base_dir, bool seconds = false);
double mean_seconds(const DistSpec& d);  // the exact mean of a time distribution
double mean_of(const DistSpec& d, int max_context, LoadCache* cache);

// scenario_catalog.cpp: the scenario's catalog section merged into the built-in devices and models
void merge_catalog(const N& root, Source& src, std::vector<DeviceSpec>& devices, std::vector<ModelSpec>& models);

// scenario_pool.cpp: one pool (device, model, engine, fleet, cold start, memory)
PoolSpec build_pool(const N& node, const std::vector<DeviceSpec>& devices, const std::vector<ModelSpec>& models,
                    Source& src);

// scenario_ownership.cpp: pricing.owned / pricing.colocated, and the checks once the fleet is known
// engine.kind and the engine's memory fraction, limits and KV block size (scenario_engine.cpp)
const std::vector<std::string>& engine_setting_keys();
void read_engine_settings(const N& eng, PoolSpec& P);
// Settings an engine derives from its sized KV cache (SGLang's running requests).
void finish_engine_settings(PoolSpec& P);
void read_client_time(const N& eng, PoolSpec& P);                    // client_* and latency_at, after engine.host
bool derives_running_requests(const PoolSpec& P);                    // SGLang's max_running_requests, not given
int derived_running_requests(const PoolSpec& P, const Capacity& c);  // what it derives from this KV pool
// The pool's capacity sized as its engine sizes it (SGLang's running requests to a fixed point).
void size_pool_memory(PoolSpec& P, MemoryInputs& mi);
// The smallest tensor-parallel degree at which the pool fits, each sized as the engine would (0: none).
int smallest_fitting_pool_tp(const PoolSpec& P, const MemoryInputs& mi);
// Throws the located does-not-fit error of a pool whose memory does not fit.
[[noreturn]] void refuse_not_fitting(const N& node, const PoolSpec& P, const MemoryInputs& mi);
void parse_ownership(const N& n, const char* kind, PoolSpec& P, const std::vector<DeviceSpec>& devices);
// scenario_autoscale.cpp: fleet.autoscale (the starting count already read into P.replicas)
void parse_autoscale(const N& fl, PoolSpec& P);
// fleet.failures, fleet.faults and fleet.thermal (scenario_faults.cpp); after the pool's sharing
void parse_faults(const N& fl, PoolSpec& P);
// scenario_speculative.cpp: engine.speculative, and the expected tokens per verify step
void parse_speculative(const N& eng, const std::vector<ModelSpec>& models, PoolSpec& P);
double spec_tokens_per_step(const std::vector<double>& acceptance);
void finish_ownership(const N& pool_node, PoolSpec& P);
// scenario_cache.cpp: engine.prefix_cache, and the check once the classes are read
void parse_prefix_cache(const N& eng, PoolSpec& P);
void check_prefix_caches(const N& root, Scenario& s);
// scenario_disagg.cpp: pools.<name>.disaggregation (pool i of pools, every pool built), and the
// check once all are read
void parse_disaggregation(const N& dn, std::vector<PoolSpec>& pools, size_t i);
void check_disaggregation(const N& pools_node, const std::vector<PoolSpec>& pools);

// scenario_class.cpp: one request class (arrivals, lengths, traces) and its caching keys
RequestClassSpec build_class(const N& wl, const PoolSpec& pool, double duration_s, Source& src);
void parse_caching(const N& cn, RequestClassSpec& C, const PoolSpec& P);
void check_response_cache_loop(const N& cn, const RequestClassSpec& C, double duration_s);
void parse_goodput(const N& cn, RequestClassSpec& C);

}  // namespace fleetsim::detail
