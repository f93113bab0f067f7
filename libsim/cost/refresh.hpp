// A newer device against an owned pool's (`pricing.owned.newer`; docs/model.md, "Owning and
// colocating"): the same scenario run again with the pool's replicas on the newer device, and
// year by year what each fleet costs per 1M tokens served.
#pragma once
#include "base/json.hpp"
#include "core/tally.hpp"
#include "input/scenario.hpp"

namespace fleetsim {

// Every owned pool's newer fleet is a valid scenario (as newer_device_view would find it), checked
// before anything runs: `validate` and a run refuse it at once, not after the run.
void check_newer_fleets(const ScenarioSource& src, const Scenario& s);

// One owned pool's comparison. Runs the variant scenario (same seed, same arrivals) once.
// Throws InputError located at `newer:` when the variant is not a valid scenario (the model
// does not fit the newer device, a MIG profile it lacks, the facility cannot power it).
Json newer_device_view(const ScenarioSource& src, const Scenario& s, const Tally& t, size_t pool, uint32_t replication);

// Every owned pool with `newer`, put into a run report at ledger.pools.<name>.ownership.newer_device.
void add_newer_device_views(Json& report, const ScenarioSource& src, const Scenario& s, const Tally& t,
                            uint32_t replication);

}  // namespace fleetsim
