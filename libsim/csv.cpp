#include "csv.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "error.hpp"
#include "trace.hpp"

namespace fleetsim {

std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

CsvReader::CsvReader(std::istream& in, std::string path) : in_(in), path_(std::move(path)) {
  if (!std::getline(in_, header_)) throw InputError(Location{path_, 1, 0, ""}, "empty file: expected a CSV header");
  if (!header_.empty() && header_.back() == '\r') header_.pop_back();
  if (header_.compare(0, 3, "\xEF\xBB\xBF") == 0) header_.erase(0, 3);
  text_ = header_;
  std::vector<std::string> names;
  if (const int q = split_csv_line(header_, names))
    throw InputError(Location{path_, 1, q, header_}, "unterminated quoted field (no closing \")");
  for (size_t i = 0; i < names.size(); ++i) col_[lower(names[i])] = i;
}

bool CsvReader::next() {
  while (std::getline(in_, text_)) {
    ++line_;
    if (!text_.empty() && text_.back() == '\r') text_.pop_back();
    if (text_.find_first_not_of(" \t") == std::string::npos) continue;
    if (const int q = split_csv_line(text_, fields_))
      throw InputError(Location{path_, line_, q, text_}, "unterminated quoted field (no closing \")");
    return true;
  }
  return false;
}

std::string CsvReader::get(const std::string& column) const {
  auto it = col_.find(column);
  return it == col_.end() || it->second >= fields_.size() ? std::string() : fields_[it->second];
}

void CsvReader::fail(const std::string& message) const { throw InputError(Location{path_, line_, 0, text_}, message); }

double CsvReader::number(const std::string& column) const {
  const std::string s = get(column);
  if (s.empty()) return std::nan("");
  if (lower(s) == "inf") return INFINITY;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || std::isnan(v) || v < 0)
    fail("column " + column + ": expected a number >= 0, not '" + s + "'");
  return v;
}

long long CsvReader::integer(const std::string& column, long long lo, long long hi, long long dflt) const {
  const double v = number(column);
  if (std::isnan(v)) return dflt;
  if (!(v >= double(lo) && v <= double(hi)) || v != std::floor(v))
    fail("column " + column + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], not '" +
         get(column) + "'");
  return (long long)v;
}

}  // namespace fleetsim
