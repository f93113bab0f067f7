#include "input/trace.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/error.hpp"
#include "input/csv.hpp"
#include "input/json_text.hpp"

namespace fleetsim {

namespace {

constexpr double kMaxTraceSpanS = 366.0 * 86400;  // from a trace's first row to its last

// A key written twice in one object of a JSON line (the parser would keep the last one).
struct DuplicateKeys : JsonSaxWatch<nlohmann::json> {
  std::vector<std::vector<std::string>> open;
  std::string repeated;
  bool start_object(std::size_t) override {
    open.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (std::find(open.back().begin(), open.back().end(), k) != open.back().end()) {
      repeated = k;
      return false;
    }
    open.back().push_back(k);
    return true;
  }
  bool end_object() override {
    open.pop_back();
    return true;
  }
};

// Removes a trailing '\r' (CRLF files) and, on the first line, a UTF-8 byte-order mark.
void clean_line(std::string& line, bool first) {
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (first && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
}

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

[[noreturn]] void fail(const std::string& path, int line, const std::string& text, const std::string& msg,
                       int column = 0) {
  Location where{path, line, line > 0 ? std::max(column, 1) : 0, text};
  throw InputError(where, msg);
}

// digits[.digits], at most 15 digits, from c up to the first other character: the integer and
// the power of ten are exact doubles and one division rounds correctly, so this equals from_chars
// (Clinger's fast path). False, with c anywhere, for anything else.
bool plain_decimal(const char*& at, const char* end, double& v) {
  static const double kPow10[16] = {1e0, 1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                    1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  const char* c = at;  // a local: a store through `at` per digit would be kept (char may alias)
  uint64_t m = 0;      // wraps past 19 digits, but is then not used
  const char* const int_from = c;
  while (c != end && unsigned(*c - '0') < 10u) m = m * 10 + unsigned(*c++ - '0');
  const ptrdiff_t int_digits = c - int_from;
  ptrdiff_t frac = 0;
  if (c != end && *c == '.') {
    const char* const frac_from = ++c;
    while (c != end && unsigned(*c - '0') < 10u) m = m * 10 + unsigned(*c++ - '0');
    frac = c - frac_from;
  }
  at = c;
  if (int_digits + frac == 0 || int_digits + frac > 15) return false;
  v = double(m) / kPow10[frac];
  return true;
}

// A count of at most 9 plain digits, from c up to the first other character.
bool plain_count(const char*& at, const char* end, double& v) {
  const char* c = at;
  const char* const from = c;
  int64_t n = 0;
  while (c != end && unsigned(*c - '0') < 10u && c - from < 10) n = n * 10 + (*c++ - '0');
  at = c;
  if (c == from || c - from > 9) return false;
  v = double(n);
  return n <= 100000000;
}

// A plain decimal number: digits, one point, an exponent; no hex, inf or nan (strtod takes them).
bool parse_double(std::string_view s, double& v) {
  if (s.empty()) return false;
  {
    const char* c = s.data();
    const char* const end = c + s.size();
    if (plain_decimal(c, end, v) && c == end) return true;
  }
  for (char c : s)
    if (!((c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')) return false;
  // from_chars rounds as strtod does, several times faster; strtod keeps the cases it reads
  // differently (a leading '+', out of range)
  const char* b = s.data() + (s[0] == '+' && s.size() > 1 && s[1] != '+' && s[1] != '-');
  const auto [ptr, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (ec == std::errc() && ptr == s.data() + s.size()) return std::isfinite(v);
  const std::string z(s);
  char* end = nullptr;
  v = std::strtod(z.c_str(), &end);
  return end && *end == '\0' && std::isfinite(v);
}

bool parse_count(std::string_view s, double& v) {
  // plain digits (nearly every row) need no floating-point parse; "12.0" or "1e3" take the long way
  {
    const char* c = s.data();
    const char* const end = c + s.size();
    const char* const from = c;
    if (plain_count(c, end, v) && c == end) return true;
    if (c == end && c - from <= 9) return false;  // plain digits above 10^8
  }
  return parse_double(s, v) && v >= 0 && v == std::floor(v) && v <= 1e8;
}

// The common trace row, "timestamp,prompt,output" in plain digits with nothing around them: parsed
// in one pass as parse_double and parse_count would. False for any other row, which then takes
// the general path with its errors.
bool plain_row(std::string_view row, double& ts, double& p, double& o) {
  const char* c = row.data();
  const char* const end = c + row.size();
  return plain_decimal(c, end, ts) && c != end && *c++ == ',' && plain_count(c, end, p) && c != end && *c++ == ',' &&
         plain_count(c, end, o) && c == end;
}

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

// "2023-11-16 18:15:46.6805900" (optionally with 'T' and a trailing 'Z') -> seconds since epoch;
// anything else after the seconds (an offset such as +05:00, text) is refused, not dropped
bool parse_wallclock(const std::string& s, double& v) {
  int y, mo, d, h, mi;
  double sec;
  char sep;
  std::istringstream in(s);
  char dash1, dash2, colon1, colon2;
  if (!(in >> y >> dash1 >> mo >> dash2 >> d)) return false;
  in.get(sep);
  if (!(in >> h >> colon1 >> mi >> colon2 >> sec)) return false;
  std::string rest;
  std::getline(in, rest);
  while (!rest.empty() && (rest.back() == ' ' || rest.back() == '\t' || rest.back() == '\r')) rest.pop_back();
  if (!rest.empty() && rest != "Z") return false;
  if (dash1 != '-' || dash2 != '-' || colon1 != ':' || colon2 != ':' || (sep != ' ' && sep != 'T')) return false;
  static const int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (mo < 1 || mo > 12 || d < 1 || h < 0 || h > 23 || mi < 0 || mi > 59 || !(sec >= 0 && sec < 61)) return false;
  if (d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return false;  // 2023-02-31 is no date
  v = double(days_from_civil(y, unsigned(mo), unsigned(d))) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
  return true;
}

// Traces are regular files of bounded size: a device like /dev/zero would never end a line.
constexpr uintmax_t kMaxTraceBytes = uintmax_t(4) << 30;

std::ifstream open_or_fail(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    throw InputError(Location{path, 0, 0, ""}, "cannot open file (does it exist and is it readable?)");
  if (!std::filesystem::is_regular_file(st))
    throw InputError(Location{path, 0, 0, ""}, "not a regular file (a trace or CSV file is expected)");
  const uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec || size > kMaxTraceBytes)
    throw InputError(Location{path, 0, 0, ""}, "larger than 4 GiB; cut the trace to the span you want to replay");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw InputError(Location{path, 0, 0, ""}, "cannot open file (does it exist and is it readable?)");
  return f;
}

std::string plural(int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

void add_reason(std::string& reason, int64_t n, const std::string& what) {
  if (n == 0) return;
  if (!reason.empty()) reason += "; ";
  reason += what;
}

[[noreturn]] void no_requests(const std::string& path, int lineno, const TraceData& t) {
  fail(path, lineno, "",
       t.skipped > 0
           ? "trace has no usable requests (" + plural(t.skipped, "row", "rows") + " skipped: " + t.skipped_reason + ")"
           : std::string("trace has no requests"));
}

// ------------------------------------------------------------------------------------------ CSV

enum class CsvLayout { native, splitwise, azure_wallclock, burstgpt };

TraceData load_csv(const std::string& path, std::ifstream& f, const TraceOptions& opt) {
  CsvReader r(f, path, "empty trace file (expected a header row)");
  const std::vector<std::string>& header = r.header();
  const std::string line = r.header_line();
  TraceData t;
  int ct = -1, cp = -1, co = -1, cm = -1;
  CsvLayout layout = CsvLayout::native;
  auto find = [&](const char* name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return int(i);
    return -1;
  };
  if ((ct = find("timestamp_s")) >= 0) {
    cp = find("prompt_tokens");
    co = find("output_tokens");
    t.layout = "timestamp_s,prompt_tokens,output_tokens";
  } else if ((ct = find("arrived_at")) >= 0) {
    cp = find("num_prefill_tokens");
    co = find("num_decode_tokens");
    layout = CsvLayout::splitwise;
    t.layout = "arrived_at,num_prefill_tokens,num_decode_tokens";
  } else if ((ct = find("TIMESTAMP")) >= 0) {
    cp = find("ContextTokens");
    co = find("GeneratedTokens");
    layout = CsvLayout::azure_wallclock;
    t.layout = "TIMESTAMP,ContextTokens,GeneratedTokens";
  } else if ((ct = find("Timestamp")) >= 0) {
    cp = find("Request tokens");
    co = find("Response tokens");
    cm = find("Model");
    layout = CsvLayout::burstgpt;
    t.layout = "Timestamp,Model,Request tokens,Response tokens (BurstGPT)";
  }
  if (ct < 0 || cp < 0 || co < 0)
    fail(path, 1, line,
         "unrecognised trace header (expected timestamp_s,prompt_tokens,output_tokens or "
         "arrived_at,num_prefill_tokens,num_decode_tokens or TIMESTAMP,ContextTokens,GeneratedTokens or "
         "BurstGPT's Timestamp,Model,Request tokens,Response tokens,...; or Mooncake JSONL, one {...} per line)");
  const bool filtering = !opt.model_filter.empty();
  if (filtering && layout != CsvLayout::burstgpt)
    fail(path, 1, line, "a model filter applies to BurstGPT traces only; layout " + t.layout + " has no model column");
  if (filtering && cm < 0) fail(path, 1, line, "a model filter needs a 'Model' column, and this header has none");
  const bool rebase = layout == CsvLayout::azure_wallclock || layout == CsvLayout::burstgpt;
  const size_t need = size_t(std::max({ct, cp, co, cm})) + 1;
  std::map<std::string, int64_t> models;  // rows per model, for a filter that matches nothing
  int64_t failed = 0, empty_prompt = 0, matched = 0;
  int lineno = 1;
  double prev = 0, first_ts = 0;
  // the header's columns are timestamp, prompt, output in that order: most rows parse in one pass
  const bool plain_layout = (layout == CsvLayout::native || layout == CsvLayout::splitwise) && ct == 0 && cp == 1 &&
                            co == 2 && header.size() == 3;
  while (r.next_row()) {
    lineno = r.line();
    // the row's text only for an error: a copy per row is most of a large trace's parse
    struct RowText {
      const CsvReader& r;
      operator std::string() const { return r.text(); }
    } const line{r};
    double ts, p, o;
    if (!plain_layout || !plain_row(r.record(), ts, p, o)) {
      const std::vector<std::string_view>& cols = r.views();
      if (cols.size() < need) fail(path, lineno, line, "too few columns (expected " + std::to_string(need) + ")");
      // a field more than the header has is a comma the writer did not quote: the columns may have moved
      if (cols.size() > header.size())
        fail(path, lineno, line,
             fmt::format("{} fields, but the header has {} (quote a field that holds a comma)", cols.size(),
                         header.size()));
      if (layout == CsvLayout::azure_wallclock) {
        if (!parse_wallclock(std::string(cols[size_t(ct)]), ts))
          fail(path, lineno, line,
               "bad TIMESTAMP '" + std::string(cols[size_t(ct)]) +
                   "' (expected YYYY-MM-DD HH:MM:SS.fff in UTC, optionally with a trailing Z)");
      } else if (!parse_double(cols[size_t(ct)], ts)) {
        fail(path, lineno, line, "bad timestamp '" + std::string(cols[size_t(ct)]) + "' (expected seconds)");
      }
      if (!parse_count(cols[size_t(cp)], p))
        fail(path, lineno, line,
             "bad prompt token count '" + std::string(cols[size_t(cp)]) + "' (expected an integer >= 0)");
      if (!parse_count(cols[size_t(co)], o))
        fail(path, lineno, line,
             "bad output token count '" + std::string(cols[size_t(co)]) + "' (expected an integer >= 0)");
    }
    if (t.rows > 0 && ts < prev)
      fail(path, lineno, line, "timestamps go backwards (a trace must be sorted by arrival time)");
    if (!rebase && ts < 0) fail(path, lineno, line, "negative timestamp");
    if (t.rows == 0) first_ts = ts;
    if (ts - first_ts > kMaxTraceSpanS)
      fail(path, lineno, line,
           fmt::format("{:.6g} s after the first row: a trace spans at most a year", ts - first_ts));
    prev = ts;
    ++t.rows;
    if (cm >= 0) ++models[std::string(r.views()[size_t(cm)])];
    if (filtering && r.views()[size_t(cm)] != opt.model_filter) continue;
    ++matched;
    if (layout == CsvLayout::burstgpt) {
      // BurstGPT marks a failed request by Response tokens = 0; a request without prompt tokens
      // cannot be served either.
      if (o == 0) {
        ++failed;
        continue;
      }
    }
    if (p == 0) {  // nothing to prefill: no request a server would take
      ++empty_prompt;
      continue;
    }
    t.t_s.push_back(ts);
    t.prompt.push_back(int32_t(p));
    t.output.push_back(int32_t(o));
  }
  if (filtering && matched == 0) {
    std::string present;
    std::vector<std::string> names;
    for (const auto& [name, n] : models) {
      present += (present.empty() ? "" : ", ") + ("'" + name + "' (" + plural(n, "row", "rows") + ")");
      names.push_back(name);
    }
    const std::string s = did_you_mean(opt.model_filter, names);
    fail(path, 0, "",
         "no rows for model '" + opt.model_filter + "'" + (s.empty() ? "" : " (did you mean '" + s + "'?)") +
             "; models present: " + (present.empty() ? "none" : present));
  }
  t.skipped = failed + empty_prompt;
  add_reason(t.skipped_reason, failed, plural(failed, "failed request", "failed requests") + " (Response tokens = 0)");
  add_reason(t.skipped_reason, empty_prompt,
             plural(empty_prompt, "row", "rows") +
                 (layout == CsvLayout::burstgpt ? " with Request tokens = 0" : " with 0 prompt tokens"));
  if (t.t_s.empty()) no_requests(path, lineno, t);
  if (rebase) {
    const double first = t.t_s.front();
    for (auto& x : t.t_s) x -= first;
  }
  return t;
}

// -------------------------------------------------------------------------------- Mooncake JSONL

const char* const kMooncakeExpected =
    "expected one JSON object per line: {\"timestamp\": ms, \"input_length\": tokens, \"output_length\": tokens, "
    "\"hash_ids\": [block ids]}";

TraceData load_mooncake(const std::string& path, std::ifstream& f, const TraceOptions& opt) {
  using nlohmann::json;
  if (!opt.model_filter.empty())
    fail(path, 0, "", "a model filter applies to BurstGPT traces only; a Mooncake JSONL trace has no model field");
  if (opt.block_tokens < 1)
    fail(path, 0, "", "block_tokens must be at least 1 (tokens per hash_ids block; 512 in the Mooncake traces)");
  TraceData t;
  t.layout = "timestamp,input_length,output_length,hash_ids (Mooncake JSONL)";
  std::unordered_map<int64_t, int32_t> seen;  // every block hash of every earlier kept request, renumbered
  // requests of at least 3 blocks by their next-to-last block: a block hash names the whole prefix
  // up to it, so a later request holding that block holds all of the request's blocks but its last
  std::unordered_map<int32_t, std::vector<int32_t>> ends;
  t.block_tokens = opt.block_tokens;
  t.block_off.push_back(0);
  std::vector<double> ms;
  int64_t empty_prompt = 0, cached_sum = 0, prompt_sum = 0;
  // rows whose hash_ids count block_tokens does not give (floor or ceil of input_length over it),
  // and the tokens a block the rows imply (input_length / hash_ids count)
  int64_t hashed = 0, off_count = 0;
  std::vector<double> implied;
  std::string line;
  int lineno = 0;
  double prev = 0, first_ts = 0;
  while (std::getline(f, line)) {
    ++lineno;
    clean_line(line, lineno == 1);
    if (blank(line)) continue;
    json j;
    try {
      j = json::parse(line);
    } catch (const json::parse_error& e) {
      std::string what = e.what();
      const size_t at = what.find("column ");
      const size_t colon = at == std::string::npos ? at : what.find(": ", at);
      if (colon != std::string::npos) what = what.substr(colon + 2);
      fail(path, lineno, line, "not valid JSON (" + what + "); " + kMooncakeExpected,
           int(std::min<size_t>(e.byte, line.size() + 1)));
    } catch (const json::exception& e) {
      // a number beyond a double's range (1e400) is an out_of_range error, not a parse_error
      std::string what = e.what();
      if (const size_t b = what.find("] "); what.rfind("[json.exception.", 0) == 0 && b != std::string::npos)
        what = what.substr(b + 2);
      fail(path, lineno, line, "not valid JSON (" + what + "); " + kMooncakeExpected);
    }
    if (!j.is_object()) fail(path, lineno, line, std::string("not a JSON object; ") + kMooncakeExpected);
    if (DuplicateKeys dup; !json::sax_parse(line, &dup) && !dup.repeated.empty())
      fail(path, lineno, line, "\"" + dup.repeated + "\" written twice in this row");
    auto col_of = [&](const char* key) { return int(line.find(std::string("\"") + key + "\"") + 1); };
    auto field = [&](const char* key) -> const json& {
      const auto it = j.find(key);
      if (it == j.end()) fail(path, lineno, line, std::string("missing \"") + key + "\"; " + kMooncakeExpected);
      return *it;
    };
    auto count = [&](const char* key) {
      const json& v = field(key);
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 100000000)
        fail(path, lineno, line,
             std::string("\"") + key + "\" must be an integer token count in [0, 1e8], not " + v.dump(), col_of(key));
      return int32_t(v.get<int64_t>());
    };
    const json& jt = field("timestamp");
    if (!jt.is_number() || !std::isfinite(jt.get<double>()))
      fail(path, lineno, line, "\"timestamp\" must be a number (milliseconds), not " + jt.dump(), col_of("timestamp"));
    const double ts = jt.get<double>();
    const int32_t p = count("input_length"), o = count("output_length");
    const json& ids = field("hash_ids");
    if (!ids.is_array())
      fail(path, lineno, line, "\"hash_ids\" must be a list of integers, not " + ids.dump(), col_of("hash_ids"));
    for (const auto& id : ids) {
      if (!id.is_number_integer())
        fail(path, lineno, line, "\"hash_ids\" must be a list of integers; found " + id.dump(), col_of("hash_ids"));
      // (a 64-bit unsigned id past the signed range would alias a negative one)
      if (id.is_number_unsigned() && id.get<uint64_t>() > uint64_t(INT64_MAX))
        fail(path, lineno, line, "\"hash_ids\" must be integers within the signed 64-bit range; found " + id.dump(),
             col_of("hash_ids"));
    }
    if (t.rows > 0 && ts < prev)
      fail(path, lineno, line, "timestamps go backwards (a trace must be sorted by arrival time)");
    if (t.rows == 0) first_ts = ts;
    if ((ts - first_ts) / 1000.0 > kMaxTraceSpanS)
      fail(path, lineno, line,
           fmt::format("{:.6g} ms after the first row: a trace spans at most a year", ts - first_ts),
           col_of("timestamp"));
    prev = ts;
    ++t.rows;
    if (p == 0) {
      ++empty_prompt;
      continue;
    }
    if (!ids.empty()) {
      ++hashed;
      const int64_t n = int64_t(ids.size()), b = opt.block_tokens;
      if (n < p / b || n > (p + b - 1) / b) ++off_count;
      implied.push_back(double(p) / double(n));
    }
    // The leading blocks already seen: a block hash names the whole prefix up to that block.
    int64_t hit = 0;
    while (hit < int64_t(ids.size()) && seen.count(ids[size_t(hit)].get<int64_t>())) ++hit;
    const int32_t cached = int32_t(std::min<int64_t>(hit * opt.block_tokens, p - 1));
    for (const auto& id : ids) {
      const auto it = seen.emplace(id.get<int64_t>(), int32_t(seen.size())).first;
      t.blocks.push_back(it->second);
    }
    t.block_off.push_back(int64_t(t.blocks.size()));
    const int32_t i = int32_t(t.prompt.size());
    const int64_t b0 = t.block_off[size_t(i)], nb = int64_t(t.blocks.size()) - b0;
    int32_t parent = -1;
    for (int64_t k = nb - 1; k >= 1 && parent < 0; --k) {  // the most shared blocks first
      const auto it = ends.find(t.blocks[size_t(b0 + k)]);
      if (it == ends.end()) continue;
      for (auto c = it->second.rbegin(); c != it->second.rend() && parent < 0; ++c)
        if (t.child[size_t(*c)] < 0 && int64_t(p) >= int64_t(t.prompt[size_t(*c)]) + t.output[size_t(*c)] &&
            ts > ms[size_t(*c)])
          parent = *c;
    }
    t.parent.push_back(parent);
    t.child.push_back(-1);
    if (parent >= 0) {
      t.child[size_t(parent)] = i;
      ++t.follow_ups;
    }
    if (nb >= 3) ends[t.blocks[size_t(b0 + nb - 2)]].push_back(i);
    ms.push_back(ts);
    t.prompt.push_back(p);
    t.output.push_back(o);
    t.cached_prefix.push_back(cached);
    cached_sum += cached;
    prompt_sum += p;
  }
  t.skipped = empty_prompt;
  add_reason(t.skipped_reason, empty_prompt, plural(empty_prompt, "row", "rows") + " with input_length = 0");
  if (ms.empty()) no_requests(path, lineno, t);
  // a block size the hashes were not made with would match prefixes at the wrong lengths: refused
  // where most rows disagree with it and their median block is twice it or more, or half or less
  // (a trace may hash less than every block, so nearer sizes pass)
  double median = 0;
  if (hashed > 0 && 2 * off_count > hashed) {
    std::nth_element(implied.begin(), implied.begin() + long(implied.size() / 2), implied.end());
    median = implied[implied.size() / 2];
  }
  if (median >= 2.0 * opt.block_tokens || (median > 0 && median <= 0.5 * opt.block_tokens)) {
    fail(path, 0, "",
         fmt::format("{} of {} rows have a hash_ids count that {} tokens a block do not give (input_length / {}, "
                     "rounded either way); the rows imply about {:.0f} tokens a block: set "
                     "workload.arrival.block_tokens to the size the trace was hashed with",
                     off_count, hashed, opt.block_tokens, opt.block_tokens, median));
  }
  t.t_s.reserve(ms.size());
  for (double x : ms) t.t_s.push_back((x - ms.front()) / 1000.0);
  t.prefix_hit_share = double(cached_sum) / double(prompt_sum);
  return t;
}

}  // namespace

TraceData load_trace(const std::string& path, const TraceOptions& opt) {
  std::ifstream f = open_or_fail(path);
  // The first character that is not a byte-order mark or white space tells JSONL from CSV.
  char first = 0;
  {
    std::string head;
    int n = 0;
    while (first == 0 && std::getline(f, head)) {
      clean_line(head, ++n == 1);
      const size_t i = head.find_first_not_of(" \t\r");
      if (i != std::string::npos) first = head[i];
    }
    f.clear();
    f.seekg(0);
  }
  return first == '{' ? load_mooncake(path, f, opt) : load_csv(path, f, opt);
}

TraceData load_trace_csv(const std::string& path) { return load_trace(path); }

std::vector<double> load_csv_column(const std::string& path, const std::string& column) {
  std::ifstream f = open_or_fail(path);
  CsvReader r(f, path, "empty CSV file (expected a header row)");
  const std::vector<std::string>& header = r.header();
  int c = -1;
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == column) c = int(i);
  if (c < 0) {
    std::string s = did_you_mean(column, header);
    fail(path, 1, r.header_line(),
         "no column '" + column + "' in the header" + (s.empty() ? "" : " (did you mean '" + s + "'?)"));
  }
  std::vector<double> v;
  int lineno = 1;
  while (r.next_row()) {
    lineno = r.line();
    const std::vector<std::string_view>& cols = r.views();
    double x;
    if (size_t(c) >= cols.size() || !parse_double(cols[size_t(c)], x))
      fail(path, lineno, r.text(), "bad value in column '" + column + "' (expected a number)");
    v.push_back(x);
  }
  if (v.empty()) fail(path, lineno, "", "column '" + column + "' has no values");
  return v;
}

}  // namespace fleetsim
