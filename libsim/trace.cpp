#include "trace.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "error.hpp"

namespace fleetsim {

namespace {

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r' && c != '"') {
      cur += c;
    }
  }
  out.push_back(cur);
  for (auto& s : out) {
    size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
    s = a == std::string::npos ? "" : s.substr(a, b - a + 1);
  }
  return out;
}

[[noreturn]] void fail(const std::string& path, int line, const std::string& text, const std::string& msg) {
  Location where{path, line, line > 0 ? 1 : 0, text};
  throw InputError(where, msg);
}

bool parse_double(const std::string& s, double& v) {
  if (s.empty()) return false;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && std::isfinite(v);
}

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}

// "2023-11-16 18:15:46.6805900" (optionally with 'T' and a trailing 'Z') -> seconds since epoch
bool parse_wallclock(const std::string& s, double& v) {
  int y, mo, d, h, mi;
  double sec;
  char sep;
  std::istringstream in(s);
  char dash1, dash2, colon1, colon2;
  if (!(in >> y >> dash1 >> mo >> dash2 >> d)) return false;
  in.get(sep);
  if (!(in >> h >> colon1 >> mi >> colon2 >> sec)) return false;
  if (dash1 != '-' || dash2 != '-' || colon1 != ':' || colon2 != ':' || (sep != ' ' && sep != 'T')) return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec >= 61) return false;
  v = double(days_from_civil(y, unsigned(mo), unsigned(d))) * 86400.0 + h * 3600.0 + mi * 60.0 + sec;
  return true;
}

std::ifstream open_or_fail(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw InputError(Location{path, 0, 0, ""}, "cannot open file (does it exist and is it readable?)");
  return f;
}

}  // namespace

TraceData load_trace_csv(const std::string& path) {
  std::ifstream f = open_or_fail(path);
  std::string line;
  if (!std::getline(f, line)) fail(path, 1, "", "empty trace file (expected a header row)");
  const auto header = split_csv(line);
  TraceData t;
  int ct = -1, cp = -1, co = -1;
  bool wallclock = false;
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
    t.layout = "arrived_at,num_prefill_tokens,num_decode_tokens";
  } else if ((ct = find("TIMESTAMP")) >= 0) {
    cp = find("ContextTokens");
    co = find("GeneratedTokens");
    wallclock = true;
    t.layout = "TIMESTAMP,ContextTokens,GeneratedTokens";
  }
  if (ct < 0 || cp < 0 || co < 0)
    fail(path, 1, line,
         "unrecognised trace header (expected timestamp_s,prompt_tokens,output_tokens or "
         "arrived_at,num_prefill_tokens,num_decode_tokens or TIMESTAMP,ContextTokens,GeneratedTokens)");
  int lineno = 1;
  double first = 0;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    const auto cols = split_csv(line);
    const size_t need = size_t(std::max(ct, std::max(cp, co))) + 1;
    if (cols.size() < need) fail(path, lineno, line, "too few columns (expected " + std::to_string(need) + ")");
    double ts, p, o;
    if (wallclock) {
      if (!parse_wallclock(cols[size_t(ct)], ts))
        fail(path, lineno, line, "bad TIMESTAMP '" + cols[size_t(ct)] + "' (expected YYYY-MM-DD HH:MM:SS.fff)");
    } else if (!parse_double(cols[size_t(ct)], ts)) {
      fail(path, lineno, line, "bad timestamp '" + cols[size_t(ct)] + "' (expected seconds)");
    }
    if (!parse_double(cols[size_t(cp)], p) || p < 0 || p != std::floor(p) || p > 1e8)
      fail(path, lineno, line, "bad prompt token count '" + cols[size_t(cp)] + "' (expected an integer >= 0)");
    if (!parse_double(cols[size_t(co)], o) || o < 0 || o != std::floor(o) || o > 1e8)
      fail(path, lineno, line, "bad output token count '" + cols[size_t(co)] + "' (expected an integer >= 0)");
    if (t.t_s.empty()) first = wallclock ? ts : 0.0;
    ts -= first;
    if (!t.t_s.empty() && ts < t.t_s.back())
      fail(path, lineno, line, "timestamps go backwards (a trace must be sorted by arrival time)");
    if (ts < 0) fail(path, lineno, line, "negative timestamp");
    t.t_s.push_back(ts);
    t.prompt.push_back(int32_t(p));
    t.output.push_back(int32_t(o));
  }
  if (t.t_s.empty()) fail(path, lineno, "", "trace has no requests");
  return t;
}

std::vector<double> load_csv_column(const std::string& path, const std::string& column) {
  std::ifstream f = open_or_fail(path);
  std::string line;
  if (!std::getline(f, line)) fail(path, 1, "", "empty CSV file (expected a header row)");
  const auto header = split_csv(line);
  int c = -1;
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == column) c = int(i);
  if (c < 0) {
    std::string s = did_you_mean(column, header);
    fail(path, 1, line, "no column '" + column + "' in the header" + (s.empty() ? "" : " (did you mean '" + s + "'?)"));
  }
  std::vector<double> v;
  int lineno = 1;
  while (std::getline(f, line)) {
    ++lineno;
    if (line.empty() || line == "\r") continue;
    const auto cols = split_csv(line);
    double x;
    if (size_t(c) >= cols.size() || !parse_double(cols[size_t(c)], x))
      fail(path, lineno, line, "bad value in column '" + column + "' (expected a number)");
    v.push_back(x);
  }
  if (v.empty()) fail(path, lineno, "", "column '" + column + "' has no values");
  return v;
}

}  // namespace fleetsim
