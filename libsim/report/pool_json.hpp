// Parts of a run report that describe one pool or several pools' summed tallies: utilization,
// the fleet's events and its autoscaler's readings, slowdowns, a shared device.
#pragma once
#include "base/json.hpp"
#include "core/params.hpp"
#include "core/tally.hpp"
#include "input/scenario.hpp"

namespace fleetsim {

// num / den, or null where there is no denominator
inline Json ratio(double num, double den) { return den > 0 ? Json(num / den) : Json(nullptr); }

Json utilization_json(const PoolTally& t, double peak_flops_s, double peak_bytes_s, double kv_block_capacity_s,
                      double fixed_bytes_s, double kv_block_bytes_s, double memory_bytes_s);
Json fleet_json(const PoolTally& t, double window);
Json autoscale_signal_json(const AutoscaleParams& A, const PoolTally& t);
void slowdown_json(Json& f, const PoolTally& t, bool fallback, bool thermal);
Json sharing_json(const PoolSpec& P);
bool shares_device(const PoolSpec& P);

}  // namespace fleetsim
