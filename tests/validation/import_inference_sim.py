#!/usr/bin/env python3
"""holdout_points.csv from the inference-sim project's vLLM runs on H100 (facts only: neither
repo has a licence). Reads clones of inference-sim/training and
inference-sim/sim-to-real-accuracy-validation at the commits below and prints the file. How each
run is replayed, and why, is in tests/validation/README.md ("inference-sim runs").

    import_inference_sim.py /path/to/training-clone /path/to/sim-to-real-clone > holdout_points.csv
"""
import csv
import json
import subprocess
import sys

import yaml

TRAINING = "ed5c1d26900e6909758d5e1641a18edaf56a1caf"
S2R_GROUND_TRUTH = "0b7d0d8bf089119552b2e08fe462ea9eb2833755"  # results_iter16: full-run summaries
S2R_TRAINVAL = "dcec3fd4711c761ac16557db720d1856b604579c"

# The workload presets as the client sent them (inference-perf e8e0aa9 keeps 10 groups of 10
# prompts whatever the profile asks): system prompt, question and output tokens (max_tokens with
# ignore_eos), and the load stages (rate, seconds). The "-lite" stages are those of
# inference-sim/inference-sim@f90a1e3 testdata/trained_physics_iter29.json.
WORKLOADS = {
    "general": (100, 447, 248, [(8, 600), (20, 600)]),
    "codegen": (100, 466, 247, [(5, 600), (10, 600)]),
    "roleplay": (150, 600, 251, [(6, 1200)]),
    "reasoning": (100, 934, 1448, [(4, 1200)]),
    "general-lite": (100, 447, 248, [(2.5, 600), (6, 600)]),
    "reasoning-lite": (100, 934, 1448, [(1, 1200)]),
}
# The runs of the ground-truth set that are also in inference-sim/training, per stage there.
DUPLICATES = {2, 3, 6, 7, 9, 10, 11}
# The runs of sim-to-real-accuracy-validation's holdout rows: its LLMServingSim comparison
# (results/llmservingsim_error_records_matched.csv) and its trained-physics evaluation
# (results_trainval/error_records.csv).
GROUND_TRUTH_IDS = [10, 11, 13, 14, 15, 16, 18, 19, 2, 22, 23, 24, 25, 26, 27, 28, 29, 3, 30, 31, 46, 49, 50, 51,
                    53, 56, 57, 58, 59, 6, 7, 9]
TRAINVAL_IDS = [17, 20, 21, 48, 60, 61, 62, 63, 64, 65, 66, 67]

HEADER = ["source", "engine", "engine_version", "model", "device", "tp", "weight_dtype", "isl", "osl", "concurrency",
          "request_rate", "num_prompts", "mean_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
          "mean_e2e_ms", "output_tok_per_s", "notes"]
SERVER = "vLLM 0.15.1; prefix caching and chunked prefill on"


def git_show(clone, commit, path):
    return subprocess.check_output(["git", "-C", clone, "show", f"{commit}:{path}"], text=True)


def stages_note(stages):
    return "+".join(f"{r:g}x{d:g}" for r, d in stages)


def tpot(e2e, ttft, osl):
    return (e2e - ttft) / (osl - 1)


def training_rows(clone, w):
    dirs = subprocess.check_output(["git", "-C", clone, "ls-tree", "--name-only", TRAINING, "default_args/"],
                                   text=True).split()
    for d in sorted(dirs):
        exp = yaml.safe_load(git_show(clone, TRAINING, f"{d}/exp-config.yaml"))
        cfg = yaml.safe_load(git_show(clone, TRAINING, f"{d}/results/config.yaml"))
        sp = cfg["data"]["shared_prefix"]
        assert cfg["server"]["ignore_eos"] and cfg["api"]["streaming"] and cfg["load"]["type"] == "constant"
        distinct = sp["num_groups"] * sp["num_prompts_per_group"]
        for k, st in enumerate(cfg["load"]["stages"]):
            path = f"{d}/results/stage_{k}_lifecycle_metrics.json"
            j = json.loads(git_show(clone, TRAINING, path))
            lat = j["successes"]["latency"]
            osl = sp["output_len"]
            ttft = 1e3 * lat["time_to_first_token"]["mean"]
            e2e = 1e3 * lat["request_latency"]["mean"]
            n = int(round(st["rate"] * st["duration"]))
            # stage 1 follows stage 0 on the same server and prompts: every prompt is cached
            warm = f"warm_prompts={n} (stage 0 served every prompt); " if k > 0 else ""
            notes = (f"workload {workload_of(d)}; inference-perf constant stage {k}; poisson; "
                     f"distinct_prompts={distinct}; prompt_groups={sp['num_groups']}; "
                     f"system_prompt_tokens={sp['system_prompt_len']}; {warm}"
                     f"max_num_seqs={exp['max_num_seqs']}; max_num_batched_tokens={exp['max_num_batched_tokens']}; "
                     f"gpu_memory_utilization=0.9; max_model_len={exp['max_model_len']}; {SERVER}; "
                     f"8 GiB CPU KV offload; isl = measured prompt_len mean; osl = max_tokens (ignore_eos); "
                     f"mean_tpot_ms derived: (mean_e2e_ms - mean_ttft_ms) / (osl - 1); inference-perf's own: "
                     f"output_len mean {j['successes']['output_len']['mean']:.1f} "
                     f"(re-tokenized text), time_per_output_token {1e3 * lat['time_per_output_token']['mean']:.2f} ms "
                     f"(per SSE line); successes={j['successes']['count']} failures={j['failures']['count']}")
            w.writerow([f"inference-sim/training@{TRAINING[:7]} {path}", "vllm", "0.15.1", exp["model"], "H100-SXM",
                        exp["tensor_parallelism"], "fp16", f"{j['successes']['prompt_len']['mean']:.1f}", osl, "",
                        f"{st['rate']:g}", n, f"{ttft:.2f}", f"{1e3 * lat['time_to_first_token']['p99']:.2f}",
                        f"{tpot(e2e, ttft, osl):.3f}", "", f"{e2e:.2f}", "", notes])


def summaries(clone, commit, path):
    out = {}
    for r in csv.DictReader(git_show(clone, commit, path).splitlines()):
        if r["stage_index"] != "-1":
            continue
        e = out.setdefault(int(r["exp_id"]), {"folder": r["experiment_folder"].rsplit("/", 1)[-1], "row": r})
        e[r["metric_name"]] = float(r["actual"])
    return out


def workload_of(folder):
    for name in ("general-lite", "reasoning-lite", "general", "codegen", "roleplay", "reasoning"):
        if f"-{name}" in folder:
            return name
    raise ValueError(folder)


def s2r_rows(clone, w):
    for commit, path, ids, kind in [
            (S2R_GROUND_TRUTH, "results_iter16/error_records.csv", GROUND_TRUTH_IDS, "ground_truth"),
            (S2R_TRAINVAL, "results_trainval/error_records.csv", TRAINVAL_IDS, "trainval_data")]:
        runs = summaries(clone, commit, path)
        for i in ids:
            if i in DUPLICATES:
                continue
            e = runs[i]
            r = e["row"]
            wl = workload_of(e["folder"])
            sys_len, q_len, osl, stages = WORKLOADS[wl]
            n = int(sum(round(rate * dur) for rate, dur in stages))
            mbt = int(float(r["max_num_batched_tokens"]))
            mem = r["gpu_mem_util"] or "0.9"
            notes = (f"experiment {e['folder']}; workload {wl}; inference-perf constant stages; poisson; "
                     f"stages={stages_note(stages)}; distinct_prompts=100; prompt_groups=10; "
                     f"system_prompt_tokens={sys_len}; max_num_seqs=128; max_num_batched_tokens={mbt}; "
                     f"gpu_memory_utilization={mem}; max_model_len=4096; {SERVER}; "
                     f"cpu_offload={r['cpu_offload'] or 'not stated'}; all stages pooled; "
                     f"isl = system prompt + question (nominal); osl = max_tokens (ignore_eos); "
                     f"mean_tpot_ms derived: (mean_e2e_ms - mean_ttft_ms) / (osl - 1); "
                     f"source's itl_mean {e['itl_mean']:.3f} ms (over re-tokenized output_len)")
            w.writerow([f"inference-sim/sim-to-real-accuracy-validation@{commit[:7]} {path} "
                        f"(vllm_data/{kind}/{e['folder']}, stage_index -1, column actual)", "vllm", "0.15.1",
                        r["model"], "H100-SXM", r["tp"], r["precision"].lower(), sys_len + q_len, osl, "", "", n,
                        f"{e['ttft_mean']:.2f}", f"{e['ttft_p99']:.2f}",
                        f"{tpot(e['e2e_mean'], e['ttft_mean'], osl):.3f}", "", f"{e['e2e_mean']:.2f}", "", notes])


def main(training, s2r):
    w = csv.writer(sys.stdout, lineterminator="\n")
    w.writerow(HEADER)
    training_rows(training, w)
    s2r_rows(s2r, w)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
