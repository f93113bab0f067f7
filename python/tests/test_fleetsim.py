"""`import fleetsim`: the documents match the CLI's, inputs of every form agree, errors are
located ValueErrors, sweeps report progress, and simulations run without the GIL.

Run by ctest (test `python`) with PYTHONPATH at the built module, FLEETSIM_CLI the built CLI and
FLEETSIM_SOURCE_DIR the checkout.
"""
import json
import os
import pathlib
import subprocess
import threading

import pytest

import fleetsim

SOURCE = pathlib.Path(os.environ.get("FLEETSIM_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
TINY_SWEEP = SOURCE / "tests" / "data" / "tiny-sweep.yaml"
CLI = os.environ.get("FLEETSIM_CLI", "")

# The same small scenario as YAML text and as a dict.
SMALL_YAML = """\
name: small
seed: 3
duration_s: 600
warmup_s: 60
device: h100-sxm-80gb
model: llama-3.1-8b
fleet:
  replicas: 1
workload:
  arrival: {process: poisson, rate_per_s: 2}
  prompt_tokens: {dist: lognormal, median: 800, p99: 4000}
  output_tokens: {dist: lognormal, median: 120, p99: 600}
"""
SMALL_DICT = {
    "name": "small",
    "seed": 3,
    "duration_s": 600,
    "warmup_s": 60,
    "device": "h100-sxm-80gb",
    "model": "llama-3.1-8b",
    "fleet": {"replicas": 1},
    "workload": {
        "arrival": {"process": "poisson", "rate_per_s": 2},
        "prompt_tokens": {"dist": "lognormal", "median": 800, "p99": 4000},
        "output_tokens": {"dist": "lognormal", "median": 120, "p99": 600},
    },
}


def cli_json(*args):
    if not CLI or not os.path.exists(CLI):
        pytest.skip("FLEETSIM_CLI (the built fleetsim) is not set")
    out = subprocess.run([CLI, *args, "--format", "json"], check=False, capture_output=True, text=True)
    assert out.stdout, out.stderr
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def default_run():
    return fleetsim.run()


def test_version():
    assert fleetsim.__version__.count(".") == 2


def test_run_default_schema(default_run):
    r = default_run
    assert r["schema_version"] == 1
    assert r["kind"] == "run"
    for section in ("scenario", "requests", "latency_s", "throughput", "utilization", "cost", "capacity", "ledger"):
        assert section in r
    assert r["scenario"]["name"] == "chat-default"
    cost = r["cost"]
    assert cost["total_usd"] == pytest.approx(cost["device_hours"] * cost["usd_per_device_hour"], rel=1e-9)
    req = r["requests"]
    assert req["arrived"] == req["completed"] + req["rejected"] + req["failed"]
    assert req["completed"] > 0


def test_run_equals_cli_document(default_run):
    assert default_run == cli_json("run")
    assert fleetsim.run(TINY_SWEEP, seed=9) == cli_json("run", str(TINY_SWEEP), "--seed", "9")
    # an owned pool's newer-device comparison is part of the document
    newer = SOURCE / "scenarios" / "newer-device.yaml"
    doc = fleetsim.run(newer, overrides={"duration_s": 900})
    assert any("newer_device" in p.get("ownership", {}) for p in doc["ledger"]["pools"].values())
    assert doc == cli_json("run", str(newer), "--set", "duration_s=900")


def test_timeline_is_of_the_same_run():
    # the timeline of replication 2 is that run's: its intervals add up to the run's arrivals, and
    # asking for it changes nothing else in the document
    plain = fleetsim.run(SMALL_YAML, replication=2, timeline=False)
    timed = fleetsim.run(SMALL_YAML, replication=2, timeline=True)
    assert "timeline" not in plain and len(timed["timeline"]) > 1
    assert sum(row["arrived"] for row in timed["timeline"]) == timed["requests"]["arrived"]
    assert {k: v for k, v in timed.items() if k != "timeline"} == plain
    other = fleetsim.run(SMALL_YAML, replication=0, timeline=True)
    assert other["timeline"] != timed["timeline"]


def test_overrides_change_the_result(default_run):
    one = fleetsim.run(overrides={"fleet.replicas": 1})
    assert one["scenario"]["replicas"] == 1
    assert one["cost"]["device_hours"] == pytest.approx(default_run["cost"]["device_hours"] / 2, rel=1e-12)
    assert one["scenario"]["overrides"] == ["fleet.replicas=1"]
    # a list of --set strings is the same override
    assert fleetsim.run(overrides=["fleet.replicas=1"]) == one


def test_override_values_are_yaml():
    r = fleetsim.run(
        SMALL_YAML,
        overrides={"device": "l40s-48gb", "engine.enforce_eager": True, "workload.arrival": {"process": "poisson", "rate_per_s": 1}},
    )
    assert r["scenario"]["device"] == "l40s-48gb"
    assert r["scenario"]["rate_per_s"] == 1
    assert r["scenario"]["overrides"][0] == "device=l40s-48gb"  # a plain name stays unquoted


def test_seed():
    a = fleetsim.run(SMALL_YAML, seed=1)
    b = fleetsim.run(SMALL_YAML, seed=2)
    assert a["scenario"]["seed"] == 1 and b["scenario"]["seed"] == 2
    assert a["requests"]["arrived"] != b["requests"]["arrived"]
    assert fleetsim.run(SMALL_YAML, seed=1) == a
    with pytest.raises(TypeError):
        fleetsim.run(SMALL_YAML, seed=1.5)
    # anything that is an integer (numpy's, too) is a seed
    class Index:
        def __index__(self):
            return 1
    assert fleetsim.run(SMALL_YAML, seed=Index()) == a


def test_yaml_text_and_dict_agree():
    from_yaml = fleetsim.run(fleetsim.Scenario(yaml=SMALL_YAML, name="<small>"))
    from_dict = fleetsim.run(fleetsim.Scenario(dict=SMALL_DICT, name="<small>"))
    assert from_yaml == from_dict
    # passed directly, a str with newlines is YAML and a dict is a dict
    assert fleetsim.run(SMALL_YAML)["requests"] == from_yaml["requests"]
    assert fleetsim.run(SMALL_DICT)["requests"] == from_yaml["requests"]


def test_scenario_object():
    s = fleetsim.Scenario()
    assert s.name == "chat-default" and s.origin == "default" and not s.has_sweep
    assert s.yaml == fleetsim.default_scenario_yaml()
    t = fleetsim.Scenario(path=str(TINY_SWEEP))
    assert t.name == "tiny-sweep" and t.has_sweep and t.origin == "file"
    assert fleetsim.Scenario(TINY_SWEEP).name == "tiny-sweep"  # a pathlib.Path
    u = t.with_overrides({"fleet.replicas": 3})
    assert u.overrides == ["fleet.replicas=3"] and t.overrides == []
    assert u.run()["scenario"]["replicas"] == 3


def test_bad_key_is_a_located_value_error():
    text = SMALL_YAML.replace("fleet:\n  replicas: 1", "fleet:\n  replcas: 1")
    line = text.splitlines().index("  replcas: 1") + 1
    with pytest.raises(ValueError) as e:
        fleetsim.Scenario(yaml=text, name="<test>")
    msg = str(e.value)
    assert msg.startswith(f"<test>:{line}:3: error:"), msg
    assert "unknown key" in msg and "replicas" in msg  # did you mean
    assert isinstance(e.value, fleetsim.InputError)
    assert (e.value.file, e.value.line, e.value.column) == ("<test>", line, 3)
    # run() reports the same error
    with pytest.raises(ValueError, match=rf"<yaml>:{line}:3: error: fleet.replcas: unknown key"):
        fleetsim.run(text)


def test_hostile_yaml_is_an_input_error_not_a_crash():
    with pytest.raises(fleetsim.InputError, match="an alias .* refers to a mapping or list that holds it"):
        fleetsim.Scenario(yaml="catalog: &c {models: *c}\n")
    with pytest.raises(fleetsim.InputError, match="an alias .* refers to a mapping or list that holds it"):
        fleetsim.run(overrides=["catalog=&c {models: *c}"])


def test_swept_strings_run_as_run_takes_them():
    rows = fleetsim.sweep(SMALL_YAML, parameters={"name": ["a: b", "plain"]}, replications=1, dataframe=False).rows
    assert [r["name"] for r in rows] == ["a: b", "plain"]
    assert rows[0]["latency_s.ttft.p99"] == fleetsim.run(SMALL_YAML, overrides={"name": "a: b"})["latency_s"]["ttft"]["p99"]


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"--set fleet\.replcas=2: error"):
        fleetsim.run(overrides={"fleet.replcas": 2})
    with pytest.raises(ValueError, match="cannot open scenario file"):
        fleetsim.Scenario("no/such/file.yaml")
    with pytest.raises(TypeError):
        fleetsim.run(42)
    with pytest.raises(TypeError):
        fleetsim.Scenario(SMALL_YAML, dict=SMALL_DICT)
    # NaN is not a value YAML can carry here: fleetsim's own error, naming the override
    with pytest.raises(fleetsim.InputError, match=r"^overrides\[fleet\.replicas\]: error: not a finite number"):
        fleetsim.run(overrides={"fleet.replicas": float("nan")})
    with pytest.raises(fleetsim.InputError, match=r"^parameters: error: fleet\.replicas\.1: not a finite number"):
        fleetsim.sweep(SMALL_YAML, parameters={"fleet.replicas": [1, float("inf")]})
    # in a dict scenario: the name it was given, and where in the dict
    with pytest.raises(fleetsim.InputError, match=r"^mine: error: fleet\.replicas: not a finite number"):
        fleetsim.Scenario(dict={**SMALL_DICT, "fleet": {"replicas": float("nan")}}, name="mine")
    with pytest.raises(TypeError, match="timeline must be True, False or None, not str"):
        fleetsim.run(timeline="yes")
    with pytest.raises(TypeError, match=r"yaml= is YAML text \(a str\), not PosixPath"):
        fleetsim.Scenario(yaml=TINY_SWEEP)
    # an int argument is no bool or float, and its range is the CLI's
    with pytest.raises(TypeError, match="capacity: tp must be an int, not bool"):
        fleetsim.capacity("llama-3.1-8b", "h100-sxm-80gb", tp=True)
    with pytest.raises(TypeError, match="seed must be an int, not float"):
        fleetsim.run(seed=1.5)
    with pytest.raises(TypeError, match="run: replication must be an int, not float"):
        fleetsim.run(replication=1.0)
    with pytest.raises(TypeError, match="sweep: threads must be an int, not bool"):
        fleetsim.sweep(TINY_SWEEP, threads=True)
    with pytest.raises(fleetsim.InputError, match=r"^fleetsim\.capacity: error: tp=65 is out of range"):
        fleetsim.capacity("llama-3.1-8b", "h100-sxm-80gb", tp=65)
    with pytest.raises(fleetsim.InputError, match=r"^fleetsim\.run: error: replication=-1 is out of range"):
        fleetsim.run(replication=-1)
    # a str without a colon is a path, even where nothing is: the error names it
    with pytest.raises(fleetsim.InputError, match=r"^scenarios/chat-default: error: cannot open scenario file"):
        fleetsim.run("scenarios/chat-default")
    with pytest.raises(fleetsim.InputError, match="is a directory, not a scenario file"):
        fleetsim.run(str(TINY_SWEEP.parent))
    with pytest.raises(TypeError, match="a bytes value where a scenario holds text"):
        fleetsim.run(overrides={"device": b"h100-sxm-80gb"})

    # what json cannot write is said as json says it, not as a NaN
    loop = {}
    loop["self"] = loop
    with pytest.raises(fleetsim.InputError, match=r"^overrides\[fleet\]: error: not a value a scenario can hold"):
        fleetsim.run(overrides={"fleet": loop})
    # a bad dataframe argument before the sweep runs, not after
    with pytest.raises(TypeError, match="dataframe must be True, False or None, not str"):
        fleetsim.sweep(TINY_SWEEP, dataframe="no")
    # a bad sweep: section fails where the scenario is made, as `fleetsim validate` says
    bad = TINY_SWEEP.read_text().replace("fleet.replicas: [1, 2]", "fleet.replcas: [1, 2]")
    with pytest.raises(fleetsim.InputError, match="unknown key 'replcas'"):
        fleetsim.Scenario(yaml=bad)


def test_a_replications_newer_device_view_serves_its_arrivals():
    newer = SOURCE / "scenarios" / "newer-device.yaml"
    for rep in (0, 1):
        v = fleetsim.run(newer, overrides={"duration_s": 900}, replication=rep)
        v = v["ledger"]["pools"]["default"]["ownership"]["newer_device"]
        assert v["current"]["tokens"] == v["newer"]["tokens"]


def sweep_columns_ok(rows, params):
    for c in params + ["feasible", "pareto", "reason", "violations", "latency_s.ttft.p99",
                       "cost.per_million_output_tokens_usd", "utilization.busy_fraction", "ci95.latency_s.ttft.p99"]:
        assert c in rows.columns, c


def test_sweep_tiny():
    pd = pytest.importorskip("pandas")
    res = fleetsim.sweep(TINY_SWEEP, threads=2)
    doc = res.document
    assert doc["kind"] == "sweep"
    n = doc["sweep"]["configurations"]
    assert n == 4 and doc["sweep"]["replications"] == 2
    rows = res.rows
    assert isinstance(rows, pd.DataFrame)
    assert len(rows) == n and list(rows.index) == list(range(n))
    sweep_columns_ok(rows, ["fleet.replicas", "engine.max_num_seqs"])
    assert sorted(zip(rows["fleet.replicas"], rows["engine.max_num_seqs"])) == [(1, 32), (1, 128), (2, 32), (2, 128)]
    for row in doc["rows"]:
        assert rows.loc[row["index"], "latency_s.ttft.p99"] == row["metrics"]["latency_s"]["ttft"]["p99"]
        assert rows.loc[row["index"], "ci95.latency_s.ttft.p99"] == row["ci95"]["latency_s.ttft.p99"]
    assert res.summary == doc["summary"] and res["summary"] is res.summary
    assert set(rows.index[rows["pareto"]]) == set(res.pareto)
    cheapest = res.cheapest
    assert cheapest is not None and rows.loc[cheapest["index"], "feasible"]
    objective = rows.loc[rows["feasible"], cheapest["objective"]]
    assert cheapest["value"] == objective.min()


def test_sweep_rows_say_where_a_certain_miss_stopped():
    trace = SOURCE / "scenarios" / "traces" / "azure-llm-2023-conv.csv"
    text = ("name: settle\nseed: 1\nduration_s: 600\nwarmup_s: 60\ndevice: l4-24gb\nmodel: llama-3.1-8b\n"
            "fleet: {replicas: 1, queue_limit: 4096}\n"
            f"workload:\n  arrival: {{process: trace, path: {trace}}}\n")
    res = fleetsim.sweep(text, parameters={"device": ["l4-24gb", "h100-sxm-80gb"]}, slo={"latency_s.ttft.p99": 1.0},
                         dataframe=False)
    l4, h100 = res.rows
    assert l4["stopped_at_s"] is not None and 0 < l4["stopped_at_s"] < 600
    assert not l4["feasible"] and "certainly" in l4["violations"] and l4["latency_s.ttft.p99"] is None
    assert "latency_s.e2e.p99" not in l4  # measured by no SLO: left out of a row without figures
    assert h100["stopped_at_s"] is None and h100["feasible"] and h100["latency_s.ttft.p99"] > 0
    assert res.summary["stopped_early"] == 1
    # every configuration stopped: the objective and the SLO's metrics are still columns
    pd = pytest.importorskip("pandas")
    res = fleetsim.sweep(text, parameters={"fleet.replicas": [1]}, slo={"latency_s.ttft.p99": 1.0})
    assert isinstance(res.rows, pd.DataFrame) and len(res.rows) == 1
    for c in ("latency_s.ttft.p99", res.document["sweep"]["objective"]):
        assert c in res.rows.columns and res.rows[c].isna().all(), c


def test_sweep_equals_cli_document():
    res = fleetsim.sweep(TINY_SWEEP, threads=1, dataframe=False)
    assert res.document == cli_json("sweep", str(TINY_SWEEP), "--threads", "2")
    assert isinstance(res.rows, list) and len(res.rows) == 4 and res.rows[0]["index"] == 0


def test_shards_merge_into_the_unsharded_sweep_and_the_cli_shards():
    whole = fleetsim.sweep(TINY_SWEEP, threads=1, dataframe=False)
    shards = [fleetsim.sweep(TINY_SWEEP, threads=1, shard=(k, 3), dataframe=False) for k in range(3)]
    for k, sh in enumerate(shards):
        assert sh.document["shard"] == {"index": k, "count": 3}
        assert sh.document == cli_json("sweep", str(TINY_SWEEP), "--threads", "1", "--shard", f"{k}/3")
    merged = fleetsim.merge(reversed(shards), dataframe=False)  # in any order
    assert merged.document == whole.document
    assert fleetsim.merge([sh.document for sh in shards], dataframe=False).document == whole.document
    with pytest.raises(fleetsim.InputError, match="missing shard 2"):
        fleetsim.merge(shards[:2])
    with pytest.raises(TypeError, match="SweepResult or its document"):
        fleetsim.merge([shards[0], 5])
    for bad in [(3, 3), (-1, 2), (0, 0), (0, 2**63), (0, 2**70), (-2**70, 2)]:
        with pytest.raises(fleetsim.InputError, match=r"^fleetsim\.sweep: error: shard=\(.*\): expected \(k, n\)"):
            fleetsim.sweep(TINY_SWEEP, shard=bad)
    for bad in ["0/2", (1,), (0.5, 2), (True, 2)]:
        with pytest.raises(TypeError, match="shard must be a pair of ints"):
            fleetsim.sweep(TINY_SWEEP, shard=bad)
    with pytest.raises(fleetsim.InputError, match=r"threads=-1 is out of range \(expected a whole number in \[0, 4096\]\)"):
        fleetsim.sweep(TINY_SWEEP, threads=-1)
    with pytest.raises(fleetsim.InputError, match="backend='gpu': expected"):
        fleetsim.sweep(TINY_SWEEP, backend="gpu")


def test_scenarios_and_results_pickle():
    import pickle

    s = fleetsim.Scenario(TINY_SWEEP, overrides={"fleet.replicas": 2})
    t = pickle.loads(pickle.dumps(s))
    assert (t.name, t.origin, t.overrides, t.has_sweep, t.source, t.yaml) == (
        s.name, s.origin, s.overrides, s.has_sweep, s.source, s.yaml)
    assert fleetsim.run(t) == fleetsim.run(s)
    # the built-in default and YAML text come back as they were, and run the same
    for u in [fleetsim.Scenario(), fleetsim.Scenario(yaml=fleetsim.default_scenario_yaml(), name="text")]:
        v = pickle.loads(pickle.dumps(u))
        assert (v.origin, v.source, v.yaml) == (u.origin, u.source, u.yaml)
        assert fleetsim.run(v, overrides={"duration_s": 900}) == fleetsim.run(u, overrides={"duration_s": 900})
    # a scenario made from a relative path rebuilds in another working directory (a worker's)
    here = os.getcwd()
    try:
        os.chdir(SOURCE)
        rel = fleetsim.Scenario("scenarios/mooncake-replay.yaml", overrides={"duration_s": 60})
        blob = pickle.dumps(rel)
        os.chdir("/")
        assert fleetsim.run(pickle.loads(blob)) == fleetsim.run(rel)
        # pickled after the process changed directory, its traces are still where they were
        assert fleetsim.run(pickle.loads(pickle.dumps(rel))) == fleetsim.run(rel)
    finally:
        os.chdir(here)
    res = fleetsim.sweep(TINY_SWEEP, threads=1, dataframe=False)
    back = pickle.loads(pickle.dumps(res))
    assert back.document == res.document and back.rows == res.rows and back.summary == res.summary
    # a document changed before pickling is checked as merge checks a shard
    bad = pickle.loads(pickle.dumps(res))
    bad.document["rows"][0]["index"] = "x"
    with pytest.raises(fleetsim.InputError):
        pickle.loads(pickle.dumps(bad))
    pd = pytest.importorskip("pandas")
    df = fleetsim.sweep(TINY_SWEEP, threads=1)
    assert isinstance(pickle.loads(pickle.dumps(df)).rows, pd.DataFrame)


def test_a_shard_with_no_configuration_has_the_columns_of_one_that_has():
    pd = pytest.importorskip("pandas")
    full = fleetsim.sweep(TINY_SWEEP, threads=1)
    empty = fleetsim.sweep(TINY_SWEEP, threads=1, shard=(999, 1000))
    assert isinstance(empty.rows, pd.DataFrame) and len(empty.rows) == 0
    assert empty.rows.index.name == full.rows.index.name == "index"
    for column in ["feasible", "pareto", "reason", "violations", "replications"]:
        assert column in empty.rows.columns and column in full.rows.columns
    assert len(empty.rows[empty.rows["feasible"].astype(bool)]) == 0


def test_sweep_progress_on_the_calling_thread():
    calls = []
    me = threading.get_ident()
    fleetsim.sweep(TINY_SWEEP, threads=2, progress=lambda done, total: calls.append((done, total, threading.get_ident())))
    assert calls, "progress was never called"
    assert calls[-1][:2] == (4, 4)
    assert all(t == 4 and tid == me for _, t, tid in calls)
    dones = [d for d, _, _ in calls]
    assert dones == sorted(dones)


def test_sweep_progress_exception_propagates():
    class Stop(Exception):
        pass

    def progress(done, total):
        raise Stop()

    with pytest.raises(Stop):
        fleetsim.sweep(TINY_SWEEP, threads=2, progress=progress)


def test_sweep_parameters_given_in_python():
    res = fleetsim.sweep(SMALL_DICT, parameters={"fleet.replicas": range(1, 4)}, replications=1,
                         slo={"latency_s.ttft.p99": 0.5}, threads=2)
    doc = res.document
    assert doc["sweep"]["configurations"] == 3 and doc["sweep"]["replications"] == 1
    assert doc["sweep"]["slo"][0]["metric"] == "latency_s.ttft.p99"
    assert list(res.rows["fleet.replicas"]) == [1, 2, 3]
    with pytest.raises(ValueError, match="no sweep section"):
        fleetsim.sweep(SMALL_DICT)
    with pytest.raises(ValueError):
        fleetsim.sweep(TINY_SWEEP, backend="tpu")


@pytest.mark.parametrize("args", [
    dict(model="llama-3.1-8b", device="h100-sxm-80gb"),
    dict(model="llama-3.1-70b", device="h100-sxm-80gb", tp=2, weight_dtype="fp8", kv_dtype="fp8", context=32768),
    dict(model="llama-3.1-70b", device="l40s-48gb"),  # does not fit
])
def test_capacity_equals_cli(args):
    doc = fleetsim.capacity(**args)
    assert doc["kind"] == "capacity"
    flags = []
    for k, v in args.items():
        flags += ["--" + k.replace("_", "-"), str(v)]
    assert doc == cli_json("capacity", *flags)


def test_capacity_errors():
    with pytest.raises(ValueError, match="unknown model"):
        fleetsim.capacity("llama-9", "h100-sxm-80gb")
    with pytest.raises(ValueError, match="tp=0 is out of range"):
        fleetsim.capacity("llama-3.1-8b", "h100-sxm-80gb", tp=0)
    with pytest.raises(ValueError, match="unknown dtype"):
        fleetsim.capacity("llama-3.1-8b", "h100-sxm-80gb", weight_dtype="fp7")


def test_catalog():
    cat = fleetsim.catalog()
    assert cat["kind"] == "catalog"
    devices = {d["name"]: d for d in cat["devices"]}
    assert "h100-sxm-80gb" in devices and devices["h100-sxm-80gb"]["memory_gib"] > 70
    assert "llama-3.1-8b" in {m["name"] for m in cat["models"]}
    assert cat == cli_json("catalog")


LONG = {"duration_s": 36000}  # a few tenths of a second of simulation


def test_a_run_on_another_thread_is_the_same_run():
    # the simulation runs without the GIL (py::gil_scoped_release); whatever thread it runs on,
    # and whatever Python does meanwhile, the numbers are the same. (No timing is asserted.)
    serial = fleetsim.run(overrides=LONG)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("r", fleetsim.run(overrides=LONG)))
    t.start()
    busy = 0
    while t.is_alive():
        busy += 1
    t.join()
    assert result["r"] == serial


def test_two_threads_both_finish():
    results = [None, None]

    def work(i):
        results[i] = fleetsim.run(overrides=LONG, seed=100 + i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(r is not None for r in results)
    assert results[0]["scenario"]["seed"] == 100 and results[1]["scenario"]["seed"] == 101
    assert results[1] == fleetsim.run(overrides=LONG, seed=101)
