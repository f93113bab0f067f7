#!/usr/bin/env python3
"""Rows of serving_points.csv from surajssd/llm-k8s's vLLM benchmark results (facts only: the repo
has no licence). Reads the raw `benchmark_serving.py --save-result` JSON of each run from a clone of
the repo at the commit below, writes each run's per-request lengths to requests/llm-k8s/ and
prints the rows to append (docs/validation.md, "Latency"; tests/validation/README.md).

    import_llm_k8s.py /path/to/llm-k8s-clone > rows.csv
"""
import csv
import json
import os
import statistics
import subprocess
import sys

COMMIT = "58b61c59450e06073120a8ad166c1e9c333851a7"
DIR = "results_serving_meta-llama-Llama-3.3-70B-Instruct"
# (folder, tp, pp, network GB/s per device between the nodes, or None within one node)
# 200 Gb/s HDR InfiniBand per GPU on Standard_ND96asr_v4 with GPUDirect RDMA. The runs without
# InfiniBand are left out: the link their stages crossed is not stated.
RUNS = [("01_tp8_pp1", 8, 1, None), ("03_tp4_pp2_IB", 4, 2, 25), ("04_tp4_pp2_IB", 4, 2, 25)]
QPS = ["01", "04", "16", "inf"]  # the order the client ran them against one server


def main(clone):
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = os.path.join(here, "requests", "llm-k8s")
    os.makedirs(out_dir, exist_ok=True)
    w = csv.writer(sys.stdout, lineterminator="\n")
    for folder, tp, pp, net in RUNS:
        layout = f"tp{tp}_pp{pp}"
        for k, qps in enumerate(QPS):
            path = f"{DIR}/{folder}/serving_meta-llama-Llama-3.3-70B-Instruct_{layout}_sharegpt_qps_{qps}.json"
            j = json.loads(subprocess.check_output(["git", "-C", clone, "show", f"{COMMIT}:{path}"]))
            assert j["completed"] == j["num_prompts"] and not any(j["errors"])
            name = f"{folder}_qps_{qps}.csv"
            with open(os.path.join(out_dir, name), "w", newline="") as f:
                lw = csv.writer(f, lineterminator="\n")
                lw.writerow(["prompt_tokens", "output_tokens"])
                lw.writerows(zip(j["input_lens"], j["output_lens"]))
            e2e = [t + sum(itl) for t, itl in zip(j["ttfts"], j["itls"])]
            n = j["completed"]
            # The client's warm-up sends the first prompt before timing; every later rate replays
            # the same 200 prompts to the same server, prefix caching on (server log: hit rate 0
            # through the first run, rising from the second).
            warm = 1 if k == 0 else n
            notes = (f"benchmark_serving sharegpt; poisson; burstiness=1.0; seed=0; warm_prompts={warm}; "
                     f"prefix caching on; e2e derived: mean of ttft + sum(itls)")
            if pp > 1:
                notes += "; V0 engine, chunked prefill at 2048 tokens (server log)"
            if net:
                notes += f"; network_gb_s={net} (200 Gb/s HDR InfiniBand per GPU)"
            w.writerow([
                f"surajssd/llm-k8s@{COMMIT[:7]} {path}", "vllm", "0.8.3", j["model_id"], "A100-40GB", tp, pp,
                "bf16", f"{j['total_input_tokens'] / n:.3f}", f"{j['total_output_tokens'] / n:.3f}", "",
                j["request_rate"] if qps != "inf" else "inf", n, f"{j['mean_ttft_ms']:.3f}",
                f"{j['p99_ttft_ms']:.3f}", f"{j['mean_tpot_ms']:.3f}", f"{j['p99_tpot_ms']:.3f}",
                f"{1000 * statistics.mean(e2e):.3f}", f"{j['output_throughput']:.2f}",
                f"requests/llm-k8s/{name}", notes])


if __name__ == "__main__":
    main(sys.argv[1])
