#!/usr/bin/env python3
"""Rows of serving_points.csv from ai-dynamo/aiconfigurator's silicon data (Apache-2.0): the
aggregated vLLM runs of openai/gpt-oss-120b (the other vLLM rows of the file were copied
earlier; tests/validation/README.md). Reads the file from a clone at the commit below and prints
the rows to append.

    import_aiconfigurator.py /path/to/aiconfigurator-clone >> serving_points.csv
"""
import csv
import re
import subprocess
import sys

COMMIT = "095f58a51c4ca8e61b66ec108d86f223f8d559ce"
PATH = "aic-core/src/aiconfigurator_core/systems/silicon_sample.csv"
DEVICES = {"h100_sxm": "H100-SXM", "h200_sxm": "H200-SXM", "b200_sxm": "B200-SXM"}
# vLLM 0.14.0 (January 2026) made asynchronous scheduling the default; a row with no version
# must predate it for the replay to run it without (tests/validation/README.md)
ASYNC_RELEASE = "2026-01-20"


def main(clone):
    text = subprocess.check_output(["git", "-C", clone, "show", f"{COMMIT}:{PATH}"], text=True)
    w = csv.writer(sys.stdout, lineterminator="\n")
    for r in csv.DictReader(text.splitlines()):
        if r["backend"] != "vllm" or r["mode"] != "agg" or r["model_path"] != "openai/gpt-oss-120b":
            continue
        src = r["silicon_data_source"]
        assert r["pp_size"] == "1" and r["attention_dp_size"] in ("", "1") and r["moe_ep_size"] in ("", "1"), r["id"]
        version = r["backend_version"]
        image = re.search(r"image=[^;]*:v([0-9][0-9.]*)", src)
        if not version and image:
            version = image.group(1)
        measured = re.search(r"measured=([0-9-]{10})", src)
        if not version:
            assert measured and measured.group(1) < ASYNC_RELEASE, r["id"]
        notes = [f"moe_tp={r['moe_tp_size']};moe_ep={r['moe_ep_size']};attn_dp={r['attention_dp_size']}"]
        notes += [x.strip() for x in src.split(";") if x.strip().split("=")[0] in ("measured", "wip", "image")]
        notes.append(f"precision {r['precision']} / {r['gemm_quant_mode']} in source (the checkpoint's MXFP4 experts)")
        w.writerow([f"aic:{r['id']}", "vllm", version, r["model_path"], DEVICES[r["system"]], r["tp_size"], "",
                    "mxfp4", r["isl"], r["osl"], r["batch_size"], "", "", f"{float(r['silicon_ttft_ms']):.2f}", "",
                    f"{float(r['silicon_tpot_ms']):.3f}", "", "", "", "", "; ".join(notes)])


if __name__ == "__main__":
    main(sys.argv[1])
