"""A fleetsim sweep in shards on a Dask cluster, merged into the unsharded result.

    python3 examples/dask/sweep_shards.py [SCENARIO] [--shards N] [--workers W] [--check]

Each task gets the pickled fleetsim.Scenario (its YAML text, origin and overrides: no shared file
system needed, except for a trace the scenario names, which must be at the same absolute path on
every worker) and runs one shard with fleetsim.sweep(..., shard=(k, n)); the SweepResults come
back pickled and fleetsim.merge joins them. A LocalCluster stands in for a real one: pass your
scheduler's address to Client(...) instead. --check also runs the sweep unsharded here and exits
1 unless the merged document is identical to it.
"""
import argparse
import json
import sys

import fleetsim
from dask.distributed import Client, LocalCluster


def run_shard(scenario, k, n):
    # one thread per task: the cluster's workers are the parallelism
    return fleetsim.sweep(scenario, threads=1, shard=(k, n), dataframe=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", nargs="?", default="scenarios/sweep-fleet.yaml")
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--check", action="store_true", help="compare with the unsharded sweep")
    a = ap.parse_args()

    scenario = fleetsim.Scenario(a.scenario)
    with LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with Client(cluster) as client:
            futures = [client.submit(run_shard, scenario, k, a.shards, pure=False) for k in range(a.shards)]
            shards = client.gather(futures)
    merged = fleetsim.merge(shards)
    print(merged)
    if merged.cheapest:
        print("cheapest:", merged.cheapest["parameters"], f"{merged.cheapest['objective']} = {merged.cheapest['value']:.4g}")
    if a.check:
        whole = fleetsim.sweep(scenario, threads=a.workers, dataframe=False)
        same = json.dumps(merged.document, sort_keys=True) == json.dumps(whole.document, sort_keys=True)
        print(f"merge of {a.shards} shards == unsharded sweep: {same}")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
