// fleetsim.sweep: a scenario's sweep run on CPU threads (or CUDA), progress reported to a Python
// callable on the calling thread, and the rows as a pandas DataFrame.
#include <fmt/format.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fleetsim_python.hpp"
#include "libsim/base/error.hpp"
#include "libsim/sweep/sweep.hpp"

namespace fleetsim::py {

namespace {

struct SweepResult {
  pb::object rows, summary, document;
};

// Scalars of `j` as "prefix.a.b" -> value; lists are joined with "; " (as in the CSV).
void flatten(const Json& j, const std::string& prefix, Json& out, const std::set<std::string>& taken) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out, taken);
    return;
  }
  std::string key = taken.count(prefix) ? "metrics." + prefix : prefix;  // a metric named like a parameter
  if (j.is_array()) {
    std::string s;
    for (const auto& x : j) s += (s.empty() ? "" : "; ") + (x.is_string() ? x.get<std::string>() : x.dump());
    out[key] = s;
  } else {
    out[key] = j;
  }
}

// One flat record per configuration: index, parameters, feasible, pareto, reason, violations,
// replications, stopped_at_s, step_time, every metric path (means over replications) and ci95.<metric>.
Json flat_rows(const Json& doc) {
  std::set<std::string> params;
  for (const auto& p : doc["sweep"]["parameters"]) params.insert(p["path"].get<std::string>());
  std::set<uint64_t> pareto;
  for (const auto& i : doc["summary"]["pareto"]) pareto.insert(i.get<uint64_t>());
  std::vector<std::string> judged;
  const Json& sw = doc["sweep"];
  if (sw.contains("objective") && sw["objective"].is_string()) judged.push_back(sw["objective"].get<std::string>());
  if (sw.contains("slo") && sw["slo"].is_array())
    for (const auto& t : sw["slo"])
      if (t.contains("metric") && t["metric"].is_string()) judged.push_back(t["metric"].get<std::string>());
  Json out = Json::array();
  for (const auto& row : doc["rows"]) {
    Json r = Json::object();
    r["index"] = row["index"];
    for (const auto& [k, v] : row["parameters"].items()) r[k] = v;
    r["feasible"] = row["feasible"];
    r["pareto"] = pareto.count(row["index"].get<uint64_t>()) > 0;
    r["reason"] = row["reason"];
    std::string violations;
    for (const auto& v : row["violations"]) violations += (violations.empty() ? "" : "; ") + v.get<std::string>();
    r["violations"] = violations;
    r["replications"] = row.contains("replications") ? row["replications"] : Json(nullptr);
    // where the run stopped once its SLO miss was certain (its metrics are then absent)
    r["stopped_at_s"] = row.contains("stopped_at_s") ? row["stopped_at_s"] : Json(nullptr);
    // the step-time model that priced it (null where it could not run)
    r["step_time"] = row.contains("step_time") ? row["step_time"] : Json(nullptr);
    if (!row["metrics"].is_null()) flatten(row["metrics"], "", r, params);
    // the objective and the SLO's metrics are columns whatever the rows hold (a sweep whose every
    // configuration stopped on a certain miss has no metrics in any row)
    for (const std::string& m : judged)
      if (!r.contains(params.count(m) ? "metrics." + m : m)) r[params.count(m) ? "metrics." + m : m] = nullptr;
    if (row.contains("ci95") && row["ci95"].is_object())
      for (const auto& [k, v] : row["ci95"].items()) r["ci95." + k] = v;
    out.push_back(std::move(r));
  }
  return out;
}

// The columns every row has (index, the parameters, the verdict, the objective and the SLO's
// metrics), for a shard that holds no row: so that rows["feasible"] works on it as on any other.
std::vector<std::string> row_columns(const Json& doc) {
  std::vector<std::string> cols = {"index"};
  std::set<std::string> params;
  for (const auto& p : doc["sweep"]["parameters"]) {
    params.insert(p["path"].get<std::string>());
    cols.push_back(p["path"].get<std::string>());
  }
  for (const char* c : {"feasible", "pareto", "reason", "violations", "replications", "stopped_at_s", "step_time"})
    cols.push_back(c);
  const Json& sw = doc["sweep"];
  auto judged = [&](const std::string& m) {
    const std::string c = params.count(m) ? "metrics." + m : m;
    if (std::find(cols.begin(), cols.end(), c) == cols.end()) cols.push_back(c);
  };
  if (sw.contains("objective") && sw["objective"].is_string()) judged(sw["objective"].get<std::string>());
  if (sw.contains("slo") && sw["slo"].is_array())
    for (const auto& t : sw["slo"])
      if (t.contains("metric") && t["metric"].is_string()) judged(t["metric"].get<std::string>());
  return cols;
}

// The latest progress from run_sweep's helper thread, for the calling thread to pass on.
struct Mailbox {
  std::mutex m;
  std::condition_variable cv;
  SweepProgress last;
  bool fresh = false, finished = false;
};

// Run the sweep on a worker thread while this (Python's) thread waits without the GIL, passes
// progress to `progress` and watches for Ctrl-C. An exception from the callable or a
// KeyboardInterrupt stops the sweep after the simulations under way and is raised here.
Json run_on_worker(const ScenarioSource& src, const SweepSpec& spec, SweepOptions opt, pb::handle progress) {
  Mailbox box;
  std::atomic<bool> stop{false};
  opt.stop = &stop;
  opt.progress = [&box](const SweepProgress& p) {
    {
      std::lock_guard<std::mutex> lock(box.m);
      box.last = p;
      box.fresh = true;
    }
    box.cv.notify_one();
  };
  Json doc;
  std::exception_ptr worker_error, python_error;
  {
    pb::gil_scoped_release nogil;
    std::thread worker([&] {
      try {
        doc = run_sweep(src, spec, opt);
      } catch (...) {
        worker_error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(box.m);
        box.finished = true;
      }
      box.cv.notify_one();
    });
    for (;;) {
      SweepProgress p;
      bool fresh = false, finished = false;
      {
        std::unique_lock<std::mutex> lock(box.m);
        box.cv.wait_for(lock, std::chrono::milliseconds(100), [&] { return box.fresh || box.finished; });
        p = box.last;
        fresh = box.fresh;
        finished = box.finished;  // the last progress comes before it
        box.fresh = false;
      }
      if (!python_error) {
        pb::gil_scoped_acquire gil;
        try {
          if (PyErr_CheckSignals() != 0) throw pb::error_already_set();
          if (fresh && !progress.is_none()) progress(p.configurations_done, p.configurations_total);
        } catch (...) {
          python_error = std::current_exception();
          stop = true;
        }
      }
      if (finished) break;
    }
    worker.join();
  }
  if (python_error) std::rethrow_exception(python_error);
  if (worker_error) std::rethrow_exception(worker_error);
  return doc;
}

// `dataframe` is None, True or False, and True needs pandas: checked before a sweep runs, not after.
void check_dataframe(pb::handle dataframe, const char* fn) {
  if (!dataframe.is_none() && !pb::isinstance<pb::bool_>(dataframe))
    throw pb::type_error(std::string("fleetsim.") + fn + ": dataframe must be True, False or None, not " +
                         pb::str(pb::type::handle_of(dataframe).attr("__name__")).cast<std::string>());
  if (!dataframe.is_none() && dataframe.cast<bool>()) pb::module_::import("pandas");  // ImportError now
}

// A sweep document (whole, a shard's, or merged) as a SweepResult: rows as a DataFrame when asked
// for or when pandas imports (dataframe None), else a list of dicts.
SweepResult make_result(const Json& doc, pb::handle dataframe) {
  SweepResult r;
  r.document = to_python(doc);
  r.summary = r.document["summary"];
  r.rows = to_python(flat_rows(doc));
  const bool want = dataframe.is_none() || dataframe.cast<bool>();
  if (want) {
    try {
      pb::module_ pandas = pb::module_::import("pandas");
      pb::object df = pb::len(r.rows) > 0 ? pandas.attr("DataFrame").attr("from_records")(r.rows)
                                          : pandas.attr("DataFrame")(pb::arg("columns") = row_columns(doc));
      df = df.attr("set_index")("index");
      r.rows = df;
    } catch (pb::error_already_set& e) {
      if (!e.matches(PyExc_ImportError) || !dataframe.is_none()) throw;  // dataframe=True needs pandas
    }
  }
  return r;
}

// shard=(k, n): this shard of n, as `fleetsim sweep --shard k/n`
void set_shard(pb::handle shard, SweepOptions& opt) {
  if (shard.is_none()) return;
  // a pair of whole numbers (a wrong type is a TypeError), then in range (an InputError)
  const bool pair = (pb::isinstance<pb::tuple>(shard) || pb::isinstance<pb::list>(shard)) && pb::len(shard) == 2;
  auto whole = [](pb::handle v) { return !pb::isinstance<pb::bool_>(v) && PyIndex_Check(v.ptr()); };
  if (!pair || !whole(shard[pb::int_(0)]) || !whole(shard[pb::int_(1)]))
    throw pb::type_error("fleetsim.sweep: shard must be a pair of ints (k, n), e.g. shard=(0, 4), not " +
                         pb::repr(shard).cast<std::string>());
  // (beyond a long long's range, held at its bounds: out of range either way)
  auto whole_value = [](pb::handle v) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(pb::int_(pb::reinterpret_borrow<pb::object>(v)).ptr(), &overflow);
    return overflow > 0 ? LLONG_MAX : overflow < 0 ? LLONG_MIN : x;
  };
  const long long k = whole_value(shard[pb::int_(0)]), n = whole_value(shard[pb::int_(1)]);
  if (k < 0 || n < 1 || n > kMaxShards || k >= n)
    throw InputError(Location{"fleetsim.sweep", 0, 0, ""},
                     fmt::format("shard=({}, {}): expected (k, n) with 0 <= k < n <= {}, e.g. shard=(0, 4)",
                                 pb::repr(shard[pb::int_(0)]).cast<std::string>(),
                                 pb::repr(shard[pb::int_(1)]).cast<std::string>(), kMaxShards));
  opt.shard_index = uint32_t(k);
  opt.shard_count = uint32_t(n);
}

SweepResult merge(pb::handle shards, pb::handle dataframe) {
  check_dataframe(dataframe, "merge");
  std::vector<std::pair<std::string, Json>> docs;
  int i = 0;
  for (pb::handle x : pb::iter(shards)) {
    const std::string name = "shard " + std::to_string(i++);
    pb::object doc =
        pb::isinstance<SweepResult>(x) ? x.cast<const SweepResult&>().document : pb::reinterpret_borrow<pb::object>(x);
    if (!pb::isinstance<pb::dict>(doc))
      throw pb::type_error("fleetsim.merge: each shard is a SweepResult or its document (a dict), not " +
                           std::string(pb::str(pb::type::of(x))));
    docs.emplace_back(name, from_python(doc, name));
  }
  Json merged;
  {
    pb::gil_scoped_release nogil;
    merged = merge_sweeps(docs);
  }
  return make_result(merged, dataframe);
}

SweepResult sweep(pb::handle scenario, pb::handle overrides, pb::handle threads_arg, pb::handle progress,
                  const std::string& backend, pb::handle parameters, pb::handle replications, pb::handle slo,
                  pb::handle objective, pb::handle dataframe, pb::handle shard) {
  const int threads = int(whole_number(threads_arg, "sweep", "threads", 0, 4096));  // 0: all
  if (backend != "auto" && backend != "cpu" && backend != "cuda")
    throw InputError(Location{"fleetsim.sweep", 0, 0, ""},
                     "backend='" + backend + "': expected 'auto', 'cpu' or 'cuda'");
  if (!progress.is_none() && !PyCallable_Check(progress.ptr()))
    throw pb::type_error("fleetsim.sweep: progress must be callable as progress(done, total)");
  check_dataframe(dataframe, "sweep");
  PyScenario ps = coerce_scenario(scenario, overrides);
  // the sweep: keys given here, applied after the scenario's own and the overrides
  std::vector<std::string> sweep_sets;
  if (!parameters.is_none()) sweep_sets.push_back("sweep.parameters=" + yaml_text(parameters, -1, "parameters"));
  if (!replications.is_none())
    sweep_sets.push_back("sweep.replications=" + yaml_text(replications, -1, "replications"));
  if (!slo.is_none()) sweep_sets.push_back("sweep.slo=" + yaml_text(slo, -1, "slo"));
  if (!objective.is_none()) sweep_sets.push_back("sweep.objective=" + yaml_text(objective, -1, "objective"));
  if (!sweep_sets.empty()) ps = ps.with(sweep_sets);

  SweepOptions opt;
  opt.backend = backend == "cpu" ? Backend::cpu : backend == "cuda" ? Backend::cuda : Backend::auto_select;
  opt.threads = threads;
  set_shard(shard, opt);
  SweepSpec spec;
  {
    pb::gil_scoped_release nogil;
    spec = parse_sweep(ps.src);
  }
  return make_result(run_on_worker(ps.src, spec, opt, progress), dataframe);
}

}  // namespace

void bind_sweep(pb::module_& m) {
  pb::class_<SweepResult>(m, "SweepResult", R"(The result of fleetsim.sweep.

rows: one row per configuration, indexed by its index: the parameters, feasible, pareto, reason,
violations, replications (fewer than the sweep's where sequential stopping settled it), every metric (means over replications, as dotted paths, e.g. latency_s.ttft.p99) and
ci95.<metric>; a pandas DataFrame when pandas imports, else a list of dicts.
summary: feasible counts, cheapest {index, parameters, objective, value} or None, pareto indices.
document: the whole `fleetsim sweep --format json` document as a dict.)")
      .def_readonly("rows", &SweepResult::rows)
      .def_readonly("summary", &SweepResult::summary)
      .def_readonly("document", &SweepResult::document)
      .def_property_readonly(
          "cheapest", [](const SweepResult& r) { return pb::object(r.summary["cheapest"]); },
          "the cheapest feasible configuration {index, parameters, objective, value}, or None")
      .def_property_readonly(
          "pareto", [](const SweepResult& r) { return pb::object(r.summary["pareto"]); },
          "indices of the cost / p99 TTFT frontier, cheapest first")
      .def("__getitem__",
           [](const SweepResult& r, const std::string& key) {
             if (key == "rows") return r.rows;
             if (key == "summary") return r.summary;
             if (key == "document") return r.document;
             throw pb::key_error(key);
           })
      // pickled as its document (rows are rebuilt from it), so shards travel between processes
      .def(pb::pickle(
          [](const SweepResult& r) {
            const bool df = !pb::isinstance<pb::list>(r.rows);
            return pb::make_tuple(1, r.document, df);
          },
          [](const pb::tuple& t) {
            if (t.size() != 3 || t[0].cast<int>() != 1)
              throw pb::value_error("fleetsim.SweepResult: a pickle of another fleetsim version");
            // checked as merge checks a shard (a document changed before pickling is a located
            // error), and a DataFrame where pandas imports here, else a list
            const Json doc = from_python(t[1], "pickled SweepResult");
            {
              pb::gil_scoped_release nogil;
              check_sweep_document("pickled SweepResult", doc);
            }
            return make_result(doc, t[2].cast<bool>() ? pb::object(pb::none()) : pb::object(pb::bool_(false)));
          }))
      .def("__repr__", [](const SweepResult& r) {
        return "<fleetsim.SweepResult: " + pb::str(r.summary["configurations_run"]).cast<std::string>() +
               " configurations, " + pb::str(r.summary["feasible"]).cast<std::string>() + " feasible; " +
               r.summary["message"].cast<std::string>() + ">";
      });

  m.def("sweep", &sweep, pb::arg("scenario") = pb::none(), pb::arg("overrides") = pb::none(), pb::arg("threads") = 0,
        pb::arg("progress") = pb::none(), pb::arg("backend") = "auto", pb::kw_only(),
        pb::arg("parameters") = pb::none(), pb::arg("replications") = pb::none(), pb::arg("slo") = pb::none(),
        pb::arg("objective") = pb::none(), pb::arg("dataframe") = pb::none(), pb::arg("shard") = pb::none(),
        R"(Run a scenario's sweep: section (configurations x replications); returns a SweepResult.

scenario: as for fleetsim.run; overrides: {"path": value}, as --set (they may set sweep.* keys).
threads: CPU threads (0: all); backend: 'auto', 'cpu' or 'cuda'.
progress: progress(configurations_done, configurations_total), called on this thread about every
200 ms and once at the end; an exception it raises (or Ctrl-C) stops the sweep and is raised.
parameters, replications, slo, objective: the sweep: section's keys, set here instead, e.g.
parameters={"device": ["h100-sxm-80gb", "l40s-48gb"], "fleet.replicas": range(1, 5)},
slo={"latency_s.ttft.p99": 1.0}.
dataframe: rows as a pandas DataFrame (None: when pandas imports) or a list of dicts (False).
shard: (k, n) runs shard k of n, as `fleetsim sweep --shard k/n`; fleetsim.merge of all n shards is
exactly the unsharded result.
The GIL is released while it runs.)");

  m.def("merge", &merge, pb::arg("shards"), pb::kw_only(), pb::arg("dataframe") = pb::none(),
        R"(Merge the shards of one sweep (SweepResults, or their documents as dicts) into the result the
unsharded sweep gives, as `fleetsim merge`; a missing, repeated or foreign shard raises
fleetsim.InputError naming it.)");
}

}  // namespace fleetsim::py
