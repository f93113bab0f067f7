#include "calibrate/benchmark.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "input/csv.hpp"
#include "input/input_file.hpp"
#include "input/json_text.hpp"

namespace fleetsim {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// key=value pairs in a free-text notes cell ("max_num_seqs=128; gpu_memory_utilization=0.9").
std::map<std::string, double> note_values(const std::string& notes) {
  std::map<std::string, double> out;
  for (const char* key :
       {"max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "gpu_mem_util", "warm_prompts",
        "network_gb_s", "p2p", "distinct_prompts", "prompt_groups", "system_prompt_tokens"}) {
    const size_t at = notes.find(std::string(key) + "=");
    if (at == std::string::npos) continue;
    out[key] = std::strtod(notes.c_str() + at + std::string(key).size() + 1, nullptr);
  }
  return out;
}

// "R1xD1+R2xD2...": load stages of R requests per second for D seconds, each R x D a whole
// number of requests.
std::vector<std::pair<double, double>> parse_stages(const std::string& text,
                                                    const std::function<void(const std::string&)>& fail) {
  std::vector<std::pair<double, double>> out;
  const char* c = text.c_str();
  for (;;) {
    char* end = nullptr;
    const double r = std::strtod(c, &end);
    if (end == c || (*end != 'x' && *end != 'X')) fail("expected RATExSECONDS[+RATExSECONDS...], as 5x600+10x600");
    c = end + 1;
    const double d = std::strtod(c, &end);
    if (end == c) fail("expected RATExSECONDS[+RATExSECONDS...], as 5x600+10x600");
    if (!(r > 0 && r <= 1e6) || !(d > 0 && d <= 1e7)) fail("a rate in (0, 1e6] and seconds in (0, 1e7] per stage");
    if (std::fabs(r * d - std::round(r * d)) > 1e-6 || r * d < 1)
      fail("rate x seconds must be a whole number of requests (at least 1) in every stage");
    out.emplace_back(r, d);
    c = end;
    if (*c != '+') break;
    ++c;
  }
  if (out.size() > 64) fail("at most 64 stages");
  return out;
}

// (a microsecond at least: no server answers or steps faster, and a fit on less prices nothing)
bool latency_in_range(double s, int metric) { return std::isfinite(s) && s >= 1e-6 && s <= latency_limit_s(metric); }

std::string latency_expected(int metric, bool ms) {
  const long long limit = (long long)(latency_limit_s(metric) * (ms ? 1e3 : 1.0));
  return std::string("expected a latency of at least ") + (ms ? "0.001 ms" : "1e-06 s") + " and at most " +
         std::to_string(limit) + (ms ? " ms" : " s") + (metric == kMeanTpot ? " (a minute per token)" : " (an hour)");
}

// vllm bench serve reports a TPOT of 0 when every output is one token long (there is no second
// token to time): no measurement, not an error
bool no_tpot(double v, int metric) { return metric == kMeanTpot && v == 0.0; }

// A latency column (ms) of the current row, in seconds; NaN when the field is empty.
double csv_latency(const CsvReader& csv, const char* column, int metric) {
  const std::string s = csv.get(column);
  if (s.empty()) return std::nan("");
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() && *end == '\0' && no_tpot(v, metric)) return std::nan("");
  if (end == s.c_str() || *end != '\0' || !latency_in_range(v / 1e3, metric))
    csv.fail(std::string("column ") + column + ": " + latency_expected(metric, true) + ", not '" + s + "'");
  return v / 1e3;
}

// A bad value in a JSON result: where it is (keys and indices, located in the text by
// read_benchmarks) and the whole message.
struct FieldError {
  std::string field, message;
};

// A latency a JSON result reports (ms, or s), in seconds; NaN when the key is absent.
double json_latency(const nlohmann::json& obj, const char* key, const std::string& field, int metric, bool ms) {
  if (!obj.is_object() || !obj.contains(key)) return std::nan("");
  const nlohmann::json& v = obj[key];
  const double s = v.is_number() ? v.get<double>() / (ms ? 1e3 : 1.0) : std::nan("");
  if (no_tpot(s, metric)) return std::nan("");
  if (!latency_in_range(s, metric))
    throw FieldError{field, field + ": " + latency_expected(metric, ms) + ", not " + v.dump()};
  return s;
}

// The per-request lengths a point's `request_lengths` column names: prompt_tokens,output_tokens.
void read_request_lengths(const std::string& path, BenchPoint& p) {
  std::ifstream in(path);
  if (!in) throw InputError(Location{path, 0, 0, ""}, "cannot read the request lengths file");
  CsvReader csv(in, path, "empty file: expected a header prompt_tokens,output_tokens");
  for (const char* need : {"prompt_tokens", "output_tokens"})
    if (!csv.has(need))
      throw InputError(Location{path, 1, 0, csv.header_line()},
                       std::string("missing column '") + need + "': expected prompt_tokens,output_tokens");
  while (csv.next()) {
    p.req_prompt.push_back(int32_t(csv.integer("prompt_tokens", 1, 10000000, -1)));
    p.req_output.push_back(int32_t(csv.integer("output_tokens", 1, 10000000, -1)));
    if (p.req_prompt.back() < 0 || p.req_output.back() < 0) csv.fail("expected a length on every row");
  }
  if (p.req_prompt.empty()) throw InputError(Location{path, 1, 0, ""}, "no requests: expected one row per request");
}

// A version "MAJOR.MINOR[.PATCH...]" at or after major.minor ("" or unparsable: no).
bool version_at_least(const std::string& v, int major, int minor) {
  int a = 0, b = 0;
  if (std::sscanf(v.c_str(), "%d.%d", &a, &b) != 2) return false;
  return a > major || (a == major && b >= minor);
}

void finish_point(BenchPoint& p) {
  p.model = catalog_model_for(p.model_id);
  p.device = catalog_device_for(p.device_id);
  const std::string dt = lower(p.weight_dtype);
  // gpt-oss ships its routed experts in MXFP4 and the rest in BF16, whatever label a source puts on
  // the 4-bit experts (aiconfigurator: fp4 / nvfp4)
  if (p.model.rfind("gpt-oss", 0) == 0 && (dt == "mxfp4" || dt == "fp4" || dt == "nvfp4")) {
    p.weight_dtype = "bf16";
    p.expert_weight_dtype = "mxfp4";
  } else if (dt.rfind("fp8", 0) == 0 || (dt.empty() && lower(p.model_id).find("fp8") != std::string::npos))
    p.weight_dtype = "fp8";
  else if (dt.empty() || dt == "fp16" || dt == "bf16" || dt == "float16" || dt == "bfloat16")
    p.weight_dtype = "bf16";
  p.async_scheduling = p.engine == "vllm" && version_at_least(p.engine_version, 0, 14);
  p.group = p.engine + "/" + p.model + "/" + p.device + "/tp" + std::to_string(p.tp) +
            (p.pp > 1 ? "pp" + std::to_string(p.pp) : "");
  if (!p.req_prompt.empty() && !(p.isl > 0)) p.isl = mean_length(p.req_prompt);
  if (!p.req_output.empty() && !(p.osl > 0)) p.osl = mean_length(p.req_output);
  if (p.model_id.empty())
    p.skip = "no model named (the model column, or --model)";
  else if (p.model.empty())
    p.skip = "model '" + p.model_id + "' is not in the catalog";
  else if (p.device_id.empty())
    p.skip = "no device named (the device column, or --device)";
  else if (p.device.empty())
    p.skip = "device '" + p.device_id + "' is not in the catalog";
  else if (!(p.isl > 0) || !(p.osl > 0))
    p.skip = "prompt and output lengths not stated";
  else if (!(p.isl <= 1e7) || !(p.osl <= 1e7))
    p.skip = "prompt or output length beyond 10,000,000 tokens";
  else if (p.rate_per_s < 0 || std::isnan(p.rate_per_s))
    p.skip = "a negative request rate";
  else if (p.concurrency <= 0 && !(p.rate_per_s > 0))
    p.skip = "neither concurrency nor request rate stated";
  else if (p.concurrency <= 0 && std::isinf(p.rate_per_s) && p.num_prompts <= 0 && p.stages.empty())
    p.skip = "all requests at once (request rate inf), but not how many (num_prompts)";
  else if (p.weight_dtype != "fp8" && p.weight_dtype != "bf16")
    p.skip = "weight dtype " + p.weight_dtype + " not modelled";
}

std::vector<BenchPoint> read_csv(const std::string& path, const std::string& text, const BenchPoint& defaults) {
  std::istringstream in(text);
  CsvReader csv(in, path);
  for (const char* need : {"model", "isl", "osl"})
    if (!csv.has(need))
      throw InputError(Location{path, 1, 0, csv.header_line()},
                       std::string("missing column '") + need +
                           "': expected model, device, tp, isl, osl, concurrency or request_rate, and mean_ttft_ms, "
                           "mean_tpot_ms, mean_e2e_ms, p99_ttft_ms (any of them)");
  if (!csv.has("concurrency") && !csv.has("request_rate"))
    throw InputError(Location{path, 1, 0, csv.header_line()}, "missing column 'concurrency' or 'request_rate'");
  std::vector<BenchPoint> out;
  while (csv.next()) {
    BenchPoint p = defaults;
    p.where = csv.where();
    p.source = csv.get("source");
    if (const std::string e = csv.get("engine"); !e.empty()) {
      // another name would be replayed as vLLM, and fitted into a profile that says otherwise
      p.engine = engine_named(e);
      if (p.engine.empty()) csv.fail("column engine: expected vllm, sglang or trtllm (TensorRT-LLM), not '" + e + "'");
    }
    // a row's own version, else --engine's where the row ran on that engine
    if (!csv.get("engine_version").empty() || p.engine != defaults.engine) p.engine_version = csv.get("engine_version");
    if (!csv.get("model").empty()) p.model_id = csv.get("model");
    if (!csv.get("device").empty()) p.device_id = csv.get("device");
    p.tp = int(csv.integer("tp", 1, 64, p.tp));
    p.pp = int(csv.integer("pp", 1, 64, p.pp));
    if (!csv.get("weight_dtype").empty())
      p.weight_dtype = csv.get("weight_dtype");
    else if (csv.has("weight_dtype"))
      p.weight_dtype = "";
    p.isl = csv.number("isl");
    p.osl = csv.number("osl");
    for (const char* k : {"isl", "osl"}) {
      if (csv.number(k) > 1e7) csv.fail(std::string("column ") + k + ": more than 10,000,000 tokens");
      if (!(csv.number(k) > 0) && !csv.get(k).empty())
        csv.fail(std::string("column ") + k + ": expected a positive number of tokens, not " + csv.get(k));
    }
    const double rate = csv.number("request_rate");
    if (!csv.get("request_rate").empty() && !(rate > 0))
      csv.fail("column request_rate: expected a positive number of requests per second or inf, not " +
               csv.get("request_rate"));
    if (!csv.get("concurrency").empty()) {
      p.concurrency = int(csv.integer("concurrency", 1, 1000000, 0));
      if (rate > 0 && !std::isinf(rate))
        csv.fail(
            "a request rate and a concurrency both: fleetsim replays a closed loop of clients or an open-loop "
            "rate, not a rate capped by a concurrency (leave one of them empty)");
    } else if (!std::isnan(rate))
      p.rate_per_s = rate;
    p.num_prompts = int(csv.integer("num_prompts", 1, kMaxReplayedPrompts, 0));
    p.measured[kMeanTtft] = csv_latency(csv, "mean_ttft_ms", kMeanTtft);
    p.measured[kMeanTpot] = csv_latency(csv, "mean_tpot_ms", kMeanTpot);
    p.measured[kMeanE2e] = csv_latency(csv, "mean_e2e_ms", kMeanE2e);
    p.measured[kP99Ttft] = csv_latency(csv, "p99_ttft_ms", kP99Ttft);
    const std::string notes = csv.get("notes");
    const auto nv = note_values(notes);
    auto note_int = [&](const char* k, int hi) {
      const double v = nv.at(k);
      if (!(v >= 1 && v <= hi)) csv.fail(std::string("notes: ") + k + " out of range [1, " + std::to_string(hi) + "]");
      return int(v);
    };
    if (nv.count("max_num_seqs")) p.max_num_seqs = note_int("max_num_seqs", 16384);
    if (nv.count("max_num_batched_tokens")) p.max_batched_tokens = note_int("max_num_batched_tokens", 1 << 20);
    for (const char* k : {"gpu_memory_utilization", "gpu_mem_util"})
      if (nv.count(k)) {
        if (!(nv.at(k) > 0 && nv.at(k) <= 1)) csv.fail(std::string("notes: ") + k + " out of range (0, 1]");
        p.gpu_memory_utilization = nv.at(k);
      }
    if (nv.count("warm_prompts")) p.warm_prompts = note_int("warm_prompts", kMaxReplayedPrompts);
    if (nv.count("distinct_prompts")) p.distinct_prompts = note_int("distinct_prompts", 1000000);
    if (nv.count("prompt_groups")) p.prompt_groups = note_int("prompt_groups", 1000000);
    if (nv.count("system_prompt_tokens")) p.system_prompt_tokens = note_int("system_prompt_tokens", 10000000);
    if (p.prompt_groups > 0 && (p.distinct_prompts <= 0 || p.distinct_prompts % p.prompt_groups != 0))
      csv.fail("notes: prompt_groups must divide distinct_prompts");
    if (const size_t at = notes.find("stages="); at != std::string::npos) {
      p.stages = parse_stages(notes.substr(at + 7), [&](const std::string& why) { csv.fail("notes: stages: " + why); });
      if (!csv.get("concurrency").empty()) csv.fail("notes: stages are open-loop load: leave concurrency empty");
      p.rate_per_s = p.stages.front().first;
      double total = 0;
      for (const auto& [r, d] : p.stages) total += std::round(r * d);
      if (p.num_prompts > 0 && double(p.num_prompts) != total)
        csv.fail("num_prompts " + std::to_string(p.num_prompts) + " is not the stages' " +
                 std::to_string((long long)total) + " requests (rate x duration each)");
      p.num_prompts = int(total);
    }
    if (nv.count("network_gb_s")) {
      if (!(nv.at("network_gb_s") > 0 && nv.at("network_gb_s") <= 1e5))
        csv.fail("notes: network_gb_s out of range (0, 100000]");
      p.network_gb_s = nv.at("network_gb_s");
    }
    if (nv.count("p2p")) {
      if (nv.at("p2p") != 0 && nv.at("p2p") != 1) csv.fail("notes: p2p must be 0 or 1");
      p.peer_to_peer = nv.at("p2p") == 1;
    }
    if (const std::string rl = csv.get("request_lengths"); !rl.empty()) {
      const std::filesystem::path f = std::filesystem::path(path).parent_path() / rl;
      try {
        read_request_lengths(f.string(), p);
      } catch (const InputError& e) {
        csv.fail("column request_lengths: " + e.one_line());
      }
      if (p.num_prompts > 0 && int(p.req_prompt.size()) != p.num_prompts)
        csv.fail("column request_lengths: " + std::to_string(p.req_prompt.size()) + " requests in " + rl +
                 ", but num_prompts is " + std::to_string(p.num_prompts));
    }
    p.poisson = notes.find("poisson") != std::string::npos;
    finish_point(p);
    if (p.skip.empty() && lower(notes).find("failures=") != std::string::npos &&
        lower(notes).find("failures=0") == std::string::npos)
      p.skip = "requests failed in the measured run: its figures cover only the survivors";
    out.push_back(std::move(p));
  }
  return out;
}

// A count in a JSON result: a whole number in [1, hi].
// `field`: where it is; `key`: its name in the message.
int count_of(const nlohmann::json& v, const std::string& field, const char* key, int hi) {
  const double x = v.is_number() ? v.get<double>() : std::nan("");
  if (!(x >= 1 && x <= hi) || x != std::floor(x))
    throw FieldError{
        field, std::string(key) + ": expected a whole number in [1, " + std::to_string(hi) + "], not " + v.dump()};
  return int(x);
}

// vllm bench serve --save-result: one run per file.
BenchPoint read_vllm_json(const std::string& path, const nlohmann::json& j, const BenchPoint& defaults) {
  BenchPoint p = defaults;
  p.where = path;
  p.source = path;
  if (p.engine.empty()) p.engine = "vllm";
  if (j.contains("model_id") && !j["model_id"].is_null()) {
    if (!j["model_id"].is_string())
      throw FieldError{"model_id", "model_id: expected the model's name (a string), not " + j["model_id"].dump()};
    p.model_id = j["model_id"].get<std::string>();
  }
  // (null: no cap, as vllm bench serve writes it; a count in another type is an error, not no cap)
  if (j.contains("max_concurrency") && !j["max_concurrency"].is_null())
    p.concurrency = count_of(j["max_concurrency"], "max_concurrency", "max_concurrency", 1000000);
  if (j.contains("request_rate")) {
    const auto& r = j["request_rate"];
    if (r.is_number())
      p.rate_per_s = r.get<double>();
    else if (r.is_string() && lower(r.get<std::string>()) == "inf")
      p.rate_per_s = INFINITY;
    if (!(p.rate_per_s > 0))
      throw FieldError{"request_rate",
                       "request_rate: expected a positive number of requests per second or \"inf\", not " + r.dump()};
    p.poisson = true;  // vllm bench serve's default burstiness 1.0
  }
  if (p.concurrency > 0 && std::isinf(p.rate_per_s)) p.rate_per_s = 0;
  if (p.concurrency > 0 && p.rate_per_s > 0)
    throw FieldError{"max_concurrency",
                     "max_concurrency and a finite request_rate both: fleetsim replays a closed loop of clients or an "
                     "open-loop rate, not a rate capped by a concurrency"};
  if (j.contains("num_prompts") && !j["num_prompts"].is_null())
    p.num_prompts = count_of(j["num_prompts"], "num_prompts", "num_prompts", kMaxReplayedPrompts);
  else if (j.contains("completed") && j["completed"].is_number())
    p.num_prompts = count_of(j["completed"], "completed", "completed", kMaxReplayedPrompts);
  // a number where the result has the key (NaN where it has not)
  auto number = [&](const char* key) {
    if (!j.contains(key)) return std::nan("");
    if (!j[key].is_number()) throw FieldError{key, std::string(key) + ": expected a number, not " + j[key].dump()};
    return j[key].get<double>();
  };
  const double completed = number("completed"), in_tokens = number("total_input_tokens"),
               out_tokens = number("total_output_tokens");
  if (completed > 0 && in_tokens >= 0 && !(p.isl > 0)) p.isl = in_tokens / completed;
  if (completed > 0 && out_tokens >= 0 && !(p.osl > 0)) p.osl = out_tokens / completed;
  // per-request lengths (the dataset's prompts, what the server generated), where the result has them
  for (const char* k : {"input_lens", "output_lens"}) {
    const char* other = k[0] == 'i' ? "output_lens" : "input_lens";
    if (j.contains(k) && !j[k].is_null() && !j[k].is_array())
      throw FieldError{k, std::string(k) + ": expected a list of token counts, one per request, not " + j[k].dump()};
    if (j.contains(k) && !j[k].is_null() && !(j.contains(other) && !j[other].is_null()))
      throw FieldError{k, std::string(k) + " without " + other + ": expected both, one entry of each per request"};
  }
  if (j.contains("input_lens") && j.contains("output_lens") && j["input_lens"].is_array() &&
      j["output_lens"].is_array()) {
    const auto &in = j["input_lens"], &out = j["output_lens"];
    if (in.size() != out.size())
      throw FieldError{"output_lens", "input_lens has " + std::to_string(in.size()) + " entries and output_lens " +
                                          std::to_string(out.size()) + ": expected one of each per request"};
    bool failed = false;
    if (j.contains("errors") && j["errors"].is_array())
      for (const auto& e : j["errors"]) failed = failed || (e.is_string() && !e.get<std::string>().empty());
    for (size_t i = 0; i < in.size() && !failed; ++i) {
      p.req_prompt.push_back(count_of(in[i], "input_lens[" + std::to_string(i) + "]", "input_lens[]", 10000000));
      // an output of 0 tokens is a failed request
      if (out[i].is_number() && out[i].get<double>() == 0) {
        failed = true;
        break;
      }
      p.req_output.push_back(count_of(out[i], "output_lens[" + std::to_string(i) + "]", "output_lens[]", 10000000));
    }
    if (failed) {
      p.req_prompt.clear();
      p.req_output.clear();
      p.skip = "requests failed in the measured run: its figures cover only the survivors";
    }
  }
  p.measured[kMeanTtft] = json_latency(j, "mean_ttft_ms", "mean_ttft_ms", kMeanTtft, true);
  p.measured[kMeanTpot] = json_latency(j, "mean_tpot_ms", "mean_tpot_ms", kMeanTpot, true);
  p.measured[kMeanE2e] = json_latency(j, "mean_e2el_ms", "mean_e2el_ms", kMeanE2e, true);
  p.measured[kP99Ttft] = json_latency(j, "p99_ttft_ms", "p99_ttft_ms", kP99Ttft, true);
  const std::string skip = p.skip;
  finish_point(p);
  if (!skip.empty()) p.skip = skip;  // the failed requests are the reason, whatever else is missing
  return p;
}

// GuideLLM's report: benchmarks[] with args.profile (concurrent streams or a rate) and metrics.
std::vector<BenchPoint> read_guidellm_json(const std::string& path, const nlohmann::json& j,
                                           const BenchPoint& defaults) {
  std::vector<BenchPoint> out;
  int i = 0;
  for (const auto& b : j["benchmarks"]) {
    BenchPoint p = defaults;
    const std::string at = "benchmarks[" + std::to_string(i++) + "]";
    auto object = [&](const nlohmann::json& v, const std::string& what) {
      if (!v.is_object()) throw FieldError{what, what + ": expected an object, not " + v.dump().substr(0, 60)};
    };
    object(b, at);
    if (b.contains("metrics")) object(b["metrics"], at + ".metrics");
    if (b.contains("args")) object(b["args"], at + ".args");
    p.where = path + " " + at;
    p.source = p.where;
    if (p.engine.empty()) p.engine = "vllm";
    const auto& m = b.value("metrics", nlohmann::json::object());
    auto stat = [&](const char* metric, const char* which) -> double {
      if (!m.contains(metric)) return std::nan("");
      const auto& x = m[metric].contains("successful") ? m[metric]["successful"] : m[metric];
      return x.contains(which) && x[which].is_number() ? x[which].get<double>() : std::nan("");
    };
    auto latency = [&](const char* metric, bool p99, int k, bool ms) -> double {
      if (!m.contains(metric)) return std::nan("");
      const bool successful = m[metric].contains("successful");
      const auto& x = successful ? m[metric]["successful"] : m[metric];
      const std::string field = at + ".metrics." + metric + (successful ? ".successful" : "");
      if (!p99) return json_latency(x, "mean", field + ".mean", k, ms);
      return x.contains("percentiles") ? json_latency(x["percentiles"], "p99", field + ".percentiles.p99", k, ms)
                                       : std::nan("");
    };
    p.measured[kMeanTtft] = latency("time_to_first_token_ms", false, kMeanTtft, true);
    p.measured[kP99Ttft] = latency("time_to_first_token_ms", true, kP99Ttft, true);
    // GuideLLM's time_per_output_token_ms divides the decode time by every output token, the first
    // included (vllm-project/guidellm src/guidellm/benchmark/benchmark.py); its inter-token latency
    // divides by the tokens after the first, which is vLLM's TPOT and fleetsim's
    p.measured[kMeanTpot] =
        m.contains("inter_token_latency_ms") ? latency("inter_token_latency_ms", false, kMeanTpot, true) : std::nan("");
    p.measured[kMeanE2e] = latency("request_latency", false, kMeanE2e, false);  // seconds in GuideLLM
    if (!(p.isl > 0)) p.isl = stat("prompt_token_count", "mean");
    if (!(p.osl > 0)) p.osl = stat("output_token_count", "mean");
    const nlohmann::json args = b.value("args", nlohmann::json::object());
    const nlohmann::json prof =
        args.contains("strategy") ? args["strategy"] : args.value("profile", nlohmann::json::object());
    const std::string prof_at = at + ".args." + (args.contains("strategy") ? "strategy" : "profile");
    object(prof, prof_at);
    for (const char* key : {"type_", "strategy"})
      if (prof.contains(key) && !prof[key].is_string())
        throw FieldError{prof_at + "." + key,
                         prof_at + "." + key + ": expected a strategy's name (a string), not " + prof[key].dump()};
    const std::string kind = prof.value("type_", prof.value("strategy", std::string()));
    if (prof.contains("streams") && prof["streams"].is_number())
      p.concurrency =
          count_of(prof["streams"], at + ".args." + (args.contains("strategy") ? "strategy" : "profile") + ".streams",
                   "streams", 1000000);
    else if (prof.contains("rate") && prof["rate"].is_number()) {
      p.rate_per_s = prof["rate"].get<double>();
      p.poisson = kind == "poisson";
    } else if (kind == "synchronous") {
      p.concurrency = 1;  // GuideLLM's synchronous strategy: one request at a time, the next as it ends
    }
    if (b.contains("model") && b["model"].is_string() && p.model_id.empty()) p.model_id = b["model"].get<std::string>();
    finish_point(p);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::string benchmark_key(const BenchPoint& p) {
  std::ostringstream k;
  k.precision(17);
  k << p.engine << '|' << p.engine_version << '|' << p.model << '|' << p.device << '|' << p.tp << '|' << p.pp << '|'
    << p.isl << '|' << p.osl << '|' << p.concurrency << '|' << p.rate_per_s << '|' << p.poisson << '|' << p.num_prompts
    << '|' << p.weight_dtype << '|' << p.expert_weight_dtype << '|' << p.max_num_seqs << '|' << p.max_batched_tokens
    << '|' << p.gpu_memory_utilization << '|' << p.warm_prompts << '|' << p.distinct_prompts << '|' << p.prompt_groups
    << '|' << p.system_prompt_tokens << '|' << p.network_gb_s << '|' << p.peer_to_peer << '|' << p.stages.size() << '|'
    << p.req_prompt.size();
  return k.str();
}

double mean_length(const std::vector<int32_t>& v) {
  double s = 0;
  for (int32_t x : v) s += x;
  return v.empty() ? 0.0 : s / double(v.size());
}

double latency_limit_s(int metric) { return metric == kMeanTpot ? 60.0 : 3600.0; }

std::string engine_named(const std::string& name) {
  const std::string e = lower(name);
  if (e == "vllm" || e == "sglang") return e;
  if (e == "trtllm" || e == "tensorrt-llm" || e == "tensorrt_llm" || e == "trt-llm") return "trtllm";
  return "";
}

std::string catalog_model_for(const std::string& model_id) {
  std::string m = lower(model_id);
  if (const size_t slash = m.rfind('/'); slash != std::string::npos) m = m.substr(slash + 1);
  for (const std::string suffix : {"-fp8-dynamic", "-fp8", "-instruct-2407", "-instruct", "-hf", "-v0.1", "-instruct"})
    if (ends_with(m, suffix)) m = m.substr(0, m.size() - suffix.size());
  if (ends_with(m, "-instruct")) m = m.substr(0, m.size() - 9);
  // same architecture fields under another release name (docs/catalog.md)
  static const std::map<std::string, std::string> alias = {
      {"qwen2-7b", "qwen2.5-7b"},         {"qwen2-72b", "qwen2.5-72b"},           {"meta-llama-3-8b", "llama-3.1-8b"},
      {"llama-3.1-70b", "llama-3.1-70b"}, {"qwen3-235b-a22b", "qwen3-235b-a22b"}, {"codellama-34b", "codellama-34b"},
      {"mixtral-8x7b", "mixtral-8x7b"},   {"llama-3.3-70b", "llama-3.3-70b"},     {"mistral-nemo", "mistral-nemo-12b"}};
  if (auto it = alias.find(m); it != alias.end()) m = it->second;
  for (const auto& x : builtin_models())
    if (x.name == m) return m;
  return "";
}

std::string catalog_device_for(const std::string& device_id) {
  const std::string d = lower(device_id);
  for (const auto& x : builtin_devices())
    if (x.name == d) return d;
  static const std::map<std::string, std::string> alias = {
      {"h100-sxm", "h100-sxm-80gb"}, {"h100", "h100-sxm-80gb"}, {"h200-sxm", "h200-141gb"}, {"h200", "h200-141gb"},
      {"b200-sxm", "b200-180gb"},    {"b200", "b200-180gb"},    {"a100-80gb", "a100-80gb"}, {"a100-40gb", "a100-40gb"},
      {"l40s", "l40s-48gb"},         {"l4", "l4-24gb"},         {"mi300x", "mi300x-192gb"}};
  auto it = alias.find(d);
  return it == alias.end() ? "" : it->second;
}

std::vector<BenchPoint> read_benchmarks(const std::string& path, const BenchPoint& defaults) {
  const std::string text = read_text_file(path, "benchmark file");
  BenchPoint d = defaults;
  for (double& v : d.measured) v = std::nan("");
  const size_t first = text.find_first_not_of(" \t\r\n\xEF\xBB\xBF");
  if (first != std::string::npos && (text[first] == '{' || text[first] == '[')) {
    parse_json_located(text, path);  // a syntax error or a number beyond a double, at its line and column
    nlohmann::json j = nlohmann::json::parse(text);
    try {
      if (j.is_object() && j.contains("benchmarks") && j["benchmarks"].is_array())
        return read_guidellm_json(path, j, d);
      if (j.is_object() && j.contains("mean_ttft_ms")) return {read_vllm_json(path, j, d)};
    } catch (const FieldError& e) {
      throw InputError(json_field_location(text, path, e.field), e.message);
    } catch (const nlohmann::json::exception& e) {
      throw InputError(Location{path, 0, 0, ""}, std::string("unexpected JSON layout: ") + e.what());
    }
    throw InputError(Location{path, 0, 0, ""},
                     "not a benchmark result: expected `vllm bench serve --save-result` JSON (mean_ttft_ms, ...) or a "
                     "GuideLLM report (benchmarks: [...])");
  }
  return read_csv(path, text, d);
}

}  // namespace fleetsim
