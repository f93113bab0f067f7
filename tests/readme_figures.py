#!/usr/bin/env python3
"""The README's figures are the program's own. Every output block the README shows (the default
run's table, `capacity`'s, and each `$ build/fleetsim ...` line with what it prints) is what that
command prints now, line for line; and each figure listed below (the tour's comments, the README's
70B table, the tables in the comments of speculative-decoding.yaml and prefix-aware-routing.yaml)
is what its command reports, at the precision quoted. A change that moves one fails here until the README says
the new figure. Usage: readme_figures.py FLEETSIM SOURCE_DIR
"""
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

# (text quoted in README.md, fleetsim arguments, where the figure is, the figure as quoted, scale
# [, the file quoting it when not README.md])
# where: a regex whose one group is the figure in the table output, or json:PATH into
# `--format json`; the value read, times scale, rounded to the quoted decimals, must be the figure.
SPEC = "scenarios/speculative-decoding.yaml"
SESSIONS = "scenarios/chat-sessions.yaml"
AGENT = "scenarios/agent-loop.yaml"
MOONCAKE = "scenarios/mooncake-sessions.yaml"
PREFIX = "scenarios/prefix-aware-routing.yaml"
DISAGG = "scenarios/disaggregated-prefill.yaml"
L70 = "scenarios/llama70b-h100-h200-mi300x.yaml --format json"
TTFT = r"^  ttft +([0-9.]+)"  # the mean
TTFT_P99 = r"^  ttft +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+)"
TPOT = r"^  tpot +([0-9.]+)"
TPOT_P99 = r"^  tpot +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +([0-9.]+)"
REUSED = r"\(([0-9.]+)% of input tokens reused\)"
FIGURES = [
    ("it reads 13% against its 60% target", "run scenarios/autoscale-host-cpu.yaml",
     r"host_cpu read ([0-9.]+)% on average, .* target of 60\.0%", "13", 1),
    ("host 90% busy", "run scenarios/cpu-bound-tokenizer.yaml", r"^  one-thread +1 +([0-9.]+)%", "90", 1),
    ("device 21%", "run scenarios/cpu-bound-tokenizer.yaml", r"^  one-thread +1 +[0-9.]+% +([0-9.]+)%", "21", 1),
    ("94% of TTFT on the host", "run scenarios/cpu-bound-tokenizer.yaml", r"^  one-thread +1 .* ([0-9.]+)%$", "94", 1),
    ("p99 TTFT 33 min", "run scenarios/cpu-fallback.yaml", TTFT_P99, "33", 1 / 60000),
    ("(p99 TTFT 110 s vs 29-32 s)", "run scenarios/mps-shared-fate.yaml",
     r"^  chat_mps +[0-9]+ +[0-9]+ +[0-9.]+ +([0-9.]+)", "110", 1e-3),
    ("(p99 TTFT 110 s vs 29-32 s)", "run scenarios/mps-shared-fate.yaml",
     r"^  chat_whole +[0-9]+ +[0-9]+ +[0-9.]+ +([0-9.]+)", "29", 1e-3),
    ("(p99 TTFT 110 s vs 29-32 s)", "run scenarios/mps-shared-fate.yaml",
     r"^  chat_ts +[0-9]+ +[0-9]+ +[0-9.]+ +([0-9.]+)", "32", 1e-3),
    ("with a 1B draft: TPOT 9.1 -> 5.4 ms", "run " + SPEC + " --set engine.speculative=null", TPOT, "9.1", 1),
    ("with a 1B draft: TPOT 9.1 -> 5.4 ms", "run " + SPEC, TPOT, "5.4", 1),
    ("one user: 7.2 -> 3.8 ms", "run " + SPEC + " --set workload.arrival.clients=1 --set engine.speculative=null",
     TPOT, "7.2", 1),
    ("one user: 7.2 -> 3.8 ms", "run " + SPEC + " --set workload.arrival.clients=1", TPOT, "3.8", 1),
    ("EAGLE-style heads, 3.0 ms", "run " + SPEC + " --set workload.arrival.clients=1 --set 'engine.speculative="
     "{draft_layers: 1, draft_vocab: 32000, tokens: 4, acceptance: 0.7}'", TPOT, "3.0", 1),
    ("multi-turn chat: 92% of prompt tokens from the cache", "run " + SESSIONS, REUSED, "92", 1),
    ("p99 TTFT 70 -> 856 ms", "run " + SESSIONS, TTFT_P99, "70", 1),
    ("p99 TTFT 70 -> 856 ms", "run " + SESSIONS + " --set engine.prefix_caching=false", TTFT_P99, "856", 1),
    ("# 92% reused vs 23%", "run " + SESSIONS + " --set fleet.replicas=4 --set workload.arrival.clients=384"
     " --set fleet.router=session_affinity", REUSED, "92", 1),
    ("# 92% reused vs 23%", "run " + SESSIONS + " --set fleet.replicas=4 --set workload.arrival.clients=384",
     REUSED, "23", 1),
    ("360 tasks in 25 min, 128 s each", "run " + AGENT, r"^sessions +([0-9]+) completed", "360", 1),
    ("360 tasks in 25 min, 128 s each", "run " + AGENT, r"([0-9.]+) s per session", "128", 1),
    ("142 tasks, 282 s each", "run " + AGENT + " --set engine.prefix_caching=false",
     r"^sessions +([0-9]+) completed", "142", 1),
    ("142 tasks, 282 s each", "run " + AGENT + " --set engine.prefix_caching=false", r"([0-9.]+) s per session",
     "282", 1),
    ("session_affinity reuses 14.8% of prompt tokens", "run " + MOONCAKE, REUSED, "14.8", 1),
    ("per-replica caches, least_outstanding 7.5%", "run " + MOONCAKE + " --set fleet.router=least_outstanding",
     REUSED, "7.5", 1),
    ("48.4% of follow-ups wait for their answer (94 s each)", "run " + MOONCAKE + " --set fleet.replicas=2",
     r"([0-9.]+)% of them held for the answer", "48.4", 1),
    ("48.4% of follow-ups wait for their answer (94 s each)", "run " + MOONCAKE + " --set fleet.replicas=2",
     r"held for the answer they reply to, ([0-9.]+) s each", "94", 1),
    ("TTFT 83 s vs 92 s replayed as recorded", "run " + MOONCAKE + " --set fleet.replicas=2", TTFT, "83", 1e-3),
    ("TTFT 83 s vs 92 s replayed as recorded", "run " + MOONCAKE + " --set fleet.replicas=2"
     " --set workload.arrival.sessions=false", TTFT, "92", 1e-3),
    ("prefix_aware reuses 16.1% of prompt tokens", "run " + PREFIX, REUSED, "16.1", 1),
    ("least_outstanding 7.1%, with a shared store", "run " + PREFIX + " --set fleet.router=least_outstanding",
     REUSED, "7.1", 1),
    ("with a shared store 22.3%", "run " + PREFIX + " --set 'engine.prefix_cache={scope: replica, remote: "
     "{gib: 1024, gb_s: 50, latency_us: 100}}'", REUSED, "22.3", 1),
    ("TPOT p99 23.8 ms vs 26.0 aggregated", "run " + DISAGG, TPOT_P99, "23.8", 1),
    ("TPOT p99 23.8 ms vs 26.0 aggregated", "run " + DISAGG + " --set 'pools={agg: {fleet: {replicas: 8}}}'"
     " --set classes.chat.pool=agg", TPOT_P99, "26.0", 1),
    ("TTFT p99 385 vs 311 ms", "run " + DISAGG, TTFT_P99, "385", 1),
    ("TTFT p99 385 vs 311 ms", "run " + DISAGG + " --set 'pools={agg: {fleet: {replicas: 8}}}'"
     " --set classes.chat.pool=agg", TTFT_P99, "311", 1),
    ("eight queues, p99 TTFT 365 vs 107 ms", "run scenarios/moe-dp-attention.yaml",
     r"^  chat-dp8 +[0-9]+ +[0-9]+ +[0-9.]+ +([0-9.]+)", "365", 1),
    ("eight queues, p99 TTFT 365 vs 107 ms", "run scenarios/moe-dp-attention.yaml",
     r"^  chat-tp8 +[0-9]+ +[0-9]+ +[0-9.]+ +([0-9.]+)", "107", 1),
]
# speculative-decoding.yaml's table: users, acceptance; with the draft TPOT, output tok/s, $ per 1M
# output; without it the same (where the row has them)
OUT_TOKS = r"([0-9.]+) output tok/s"
USD_OUT = r"per 1M output \$([0-9.]+)"
SPEC_FILE = "scenarios/speculative-decoding.yaml"
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", SPEC_FILE), encoding="utf-8"):
    m = re.match(r"#\s+(\d+)\s+(0\.\d)\s+([0-9.]+) ms\s+(\d+)\s+([0-9.]+)(?:\s+([0-9.]+) ms\s+(\d+)\s+([0-9.]+))?", line)
    if not m:
        continue
    row = line.rstrip("\n")
    users, acc = m.group(1), m.group(2)
    with_args = f"run {SPEC_FILE} --set workload.arrival.clients={users} --set engine.speculative.acceptance={acc}"
    without = f"run {SPEC_FILE} --set workload.arrival.clients={users} --set engine.speculative=null"
    for args, first in ((with_args, 3), (without, 6)):
        if m.group(first):
            FIGURES += [(row, args, TPOT, m.group(first), 1, SPEC_FILE),
                        (row, args, OUT_TOKS, m.group(first + 1), 1, SPEC_FILE),
                        (row, args, USD_OUT, m.group(first + 2), 1, SPEC_FILE)]

# prefix-aware-routing.yaml's table: reuse, blocks evicted, mean and p99 TTFT (s), each row's run
EVICTED = r"blocks of [0-9]+ tokens, ([0-9]+) evicted"
for label, sets in (("prefix_aware, per replica (this file)", ""),
                    ("... with a 256 GiB host tier per replica", " --set 'engine.prefix_cache={scope: replica, cpu_gib: 256}'"),
                    ("... with a 1 TiB store the replicas share", " --set 'engine.prefix_cache={scope: replica, remote: "
                     "{gib: 1024, gb_s: 50, latency_us: 100}}'"),
                    ("least_outstanding, per replica", " --set fleet.router=least_outstanding"),
                    ("round_robin, per replica", " --set fleet.router=round_robin"),
                    ("any, one unbounded pool-wide cache", " --set fleet.router=least_outstanding"
                     " --set 'engine.prefix_cache={scope: pool}'")):
    text = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", PREFIX), encoding="utf-8").read()
    row = next(line for line in text.split("\n") if line.startswith("#   " + label))
    cells = row[4 + len(label):].split()  # reuse%, evicted (or -), mean "s", p99 "s"
    args = "run " + PREFIX + sets
    FIGURES += [(row, args, REUSED, cells[0].rstrip("%"), 1, PREFIX),
                (row, args, TTFT, cells[2], 1e-3, PREFIX),
                (row, args, TTFT_P99, cells[4], 1e-3, PREFIX)]
    if cells[1] != "-":
        FIGURES.append((row, args, EVICTED, cells[1], 1, PREFIX))

# ... and its table of EAGLE-style heads in place of the draft: users; TPOT, output tok/s, $ per 1M output
HEADS = "'engine.speculative={draft_layers: 1, draft_vocab: 32000, tokens: 4, acceptance: 0.7}'"
for line in open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", SPEC_FILE), encoding="utf-8"):
    m = re.match(r"#\s+(\d+)\s+([0-9.]+) ms\s+(\d+)\s+([0-9.]+)", line)
    if not m:
        continue
    row, args = line.rstrip("\n"), f"run {SPEC_FILE} --set workload.arrival.clients={m.group(1)} --set {HEADS}"
    FIGURES += [(row, args, TPOT, m.group(2), 1, SPEC_FILE), (row, args, OUT_TOKS, m.group(3), 1, SPEC_FILE),
                (row, args, USD_OUT, m.group(4), 1, SPEC_FILE)]

# the 70B table: pool (class), KV tokens per replica, mean TPOT (ms), p99 TTFT (s), $ per 1M output
for pool, cls, row in (("h100-tp2", "chat-h100", "| 2 × H100 TP2, bf16 | 4 | 23,312 | 39.7 ms | 1.90 s | 5.04 |"),
                       ("h200-fp8", "chat-h200", "| 2 × H200, fp8 weights and KV | 2 | 366,528 | 27.3 ms | 0.93 s | 3.11 |"),
                       ("mi300x-bf16", "chat-mi300x", "| 2 × MI300X, bf16 | 2 | 126,848 | 58.6 ms | 1.74 s | 1.66 |")):
    cells = [c.strip() for c in row.strip("|").split("|")]
    FIGURES += [
        (row, "run " + L70, f"json:pools.{pool}.capacity.kv_capacity_tokens", cells[2], 1),
        (row, "run " + L70, f"json:classes.{cls}.latency_s.tpot.mean", cells[3].split()[0], 1e3),
        (row, "run " + L70, f"json:classes.{cls}.latency_s.ttft.p99", cells[4].split()[0], 1),
        (row, "run " + L70, f"json:classes.{cls}.cost.per_million_output_tokens_usd", cells[5], 1),
    ]

# The bad.yaml the README's error example reads: `routr` at line 7, column 3.
BAD_YAML = """name: bad
duration_s: 600
device: h100-sxm-80gb
model: llama-3.1-8b
workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: 100, output_tokens: 10}
fleet:
  routr: round_robin
"""
# output blocks that are not `$ command` transcripts: the block's first line, and the command
BLOCKS = {
    "scenario  chat-default": "run",
    "llama-3.1-70b (fp8) on h200-141gb (fp8 KV)":
        "capacity --model llama-3.1-70b --device h200-141gb --weight-dtype fp8 --kv-dtype fp8 --context 32768",
}


def main():
    fleetsim, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    readme = open(os.path.join(src, "README.md"), encoding="utf-8").read()
    work = tempfile.mkdtemp()
    for d in ("scenarios", "examples", "tests", "profiles"):
        os.symlink(os.path.join(src, d), os.path.join(work, d))
    with open(os.path.join(work, "bad.yaml"), "w") as f:
        f.write(BAD_YAML)
    outputs = {}

    def output(args):
        if args not in outputs:
            p = subprocess.run([fleetsim] + shlex.split(args), cwd=work, capture_output=True, text=True, timeout=600)
            outputs[args] = p.stdout + p.stderr
        return outputs[args]

    failures = []
    checked_blocks = 0
    blocks, block = [], None  # the fenced blocks without a language: what commands print
    for line in readme.split("\n"):
        if line.startswith("```"):
            if block is not None:
                if block[0] == "":
                    blocks.append(block[1:])
                block = None
            else:
                block = [line[3:]]
        elif block is not None:
            block.append(line)
    for lines in blocks:
        if not lines:
            continue
        if lines[0].startswith("$ build/fleetsim "):
            i = 0
            while i < len(lines):
                cmd = lines[i][len("$ build/fleetsim "):]
                j = i + 1
                while j < len(lines) and not lines[j].startswith("$ "):
                    j += 1
                want = lines[i + 1:j]
                if want:  # a command shown with what it prints
                    got = output(cmd).rstrip("\n").split("\n")
                    checked_blocks += 1
                    if got != want:
                        failures.append(f"README shows `{cmd}` printing:\n  " + "\n  ".join(want) +
                                        "\nit prints:\n  " + "\n  ".join(got))
                i = j
            continue
        for first, cmd in BLOCKS.items():
            if lines[0].startswith(first):
                got = output(cmd).rstrip("\n").split("\n")[: len(lines)]
                checked_blocks += 1
                if got != lines:
                    diff = [f"  README: {a}\n  prints: {b}" for a, b in zip(lines, got) if a != b]
                    failures.append(f"README's output of `{cmd}` differs:\n" + "\n".join(diff[:5]))
    for first in BLOCKS:
        if not any(lines and lines[0].startswith(first) for lines in blocks):
            failures.append(f"no output block of README.md starts with {first!r}: the block this test knows moved")

    texts = {"README.md": readme}
    for quote, args, where, value, scale, *where_quoted in FIGURES:
        file = where_quoted[0] if where_quoted else "README.md"
        if file not in texts:
            texts[file] = open(os.path.join(src, file), encoding="utf-8").read()
        if quote not in texts[file]:
            failures.append(f"{file} no longer says {quote!r}: update this test's figure with it")
            continue
        if not re.search(r"(?<![0-9.,])" + re.escape(value) + r"(?![0-9])", quote):
            failures.append(f"figure {value!r} is not in {quote!r}")
            continue
        out = output(args)
        if where.startswith("json:"):
            try:
                x = json.loads(out)
                for k in where[5:].split("."):
                    x = x[k]
            except (ValueError, KeyError, TypeError):
                failures.append(f"`fleetsim {args}`: no {where[5:]} in its JSON")
                continue
        else:
            m = re.search(where, out, re.M)
            if not m:
                failures.append(f"`fleetsim {args}`: no line matches {where!r}")
                continue
            x = float(m.group(1))
        plain = value.replace(",", "")
        decimals = len(plain.split(".")[1]) if "." in plain else 0
        # the quoted figure is the value rounded: within half its last digit (a half either way)
        if abs(float(x) * scale - float(plain)) > 0.5 * 10**-decimals * (1 + 1e-9):
            failures.append(f"{file} says {quote!r}; `fleetsim {args}` gives {float(x) * scale:.{decimals + 2}f}, "
                            f"which is not {value} at that precision")

    for f in failures:
        print("FAIL " + f)
    print(f"readme figures: {checked_blocks} output blocks and {len(FIGURES)} quoted figures checked, "
          f"{len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
