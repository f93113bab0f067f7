// The capacity and catalog documents (`fleetsim capacity`, `fleetsim catalog`, the library API).
#pragma once
#include <string>

#include "catalog/capacity.hpp"
#include "report/report.hpp"

namespace fleetsim {

struct CapacityRequest {
  std::string model, device;
  int64_t context = 0;  // tokens per request; 0: 4096, or the model's context window if shorter
  std::string weight_dtype = "bf16", kv_dtype = "bf16", expert_weight_dtype;
  double gpu_memory_utilization = 0.9;
  int max_num_seqs = 256, max_batched_tokens = 8192, kv_block_tokens = 16;
  int tp = 1, pp = 1;
  bool enforce_eager = false;
};

struct CapacityAnswer {
  Json doc;  // {schema_version, kind: "capacity", model, device, ..., fits, capacity{...}}
  Capacity c;
  int tp_fits = 0;  // the smallest tensor-parallel degree that fits (0: none up to 64)
};

// Throws InputError (located at the flag: --model, --device, --tp, ...) for an unknown name or an
// impossible split.
CapacityAnswer capacity_document(const CapacityRequest& q);

// {schema_version, kind: "catalog", devices[], models[]}
Json catalog_document();

// The run document of one replication, as `fleetsim run --format json` writes it: with its
// timeline (60 intervals) where the fleet autoscales (timeline < 0), always (1) or never (0), and
// each owned pool's newer-device view of the same replication. Throws as simulate_once and
// check_status do.
Json run_document(const ScenarioSource& src, const Scenario& s, uint32_t replication, int timeline = -1);

}  // namespace fleetsim
