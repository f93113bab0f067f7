#include "input/csv.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "base/error.hpp"
#include "base/text.hpp"

namespace fleetsim {

// One CSV line into fields. A field may be quoted: inside quotes a comma is data and "" is one
// quote. Spaces and tabs around a field (outside its quotes) are dropped. A quote inside an
// unquoted field is kept as a character. Returns 0, or the 1-based column of an opening quote
// that is never closed.
namespace {
// A line without quotes: fields between commas, blanks around them dropped, as views.
void split_plain(std::string_view line, std::vector<std::string_view>& out) {
  out.clear();
  const char* p = line.data();
  const char* const end = p + line.size();
  for (;;) {
    const char* e = p;
    while (e != end && *e != ',') ++e;
    const char* b = p;
    const char* t = e;
    if (b != t && (*b == ' ' || *b == '\t' || t[-1] == ' ' || t[-1] == '\t')) {  // rare: trim
      while (b < t && (*b == ' ' || *b == '\t')) ++b;
      while (t > b && (t[-1] == ' ' || t[-1] == '\t')) --t;
    }
    out.emplace_back(b, size_t(t - b));
    if (e == end) break;
    p = e + 1;
  }
}
}  // namespace

int split_csv_line(const std::string& line, std::vector<std::string>& out) {
  if (line.find('"') == std::string::npos) {
    std::vector<std::string_view> views;
    split_plain(line, views);
    out.assign(views.begin(), views.end());
    return 0;
  }
  out.clear();
  std::string cur;
  size_t keep = 0;         // characters of cur that came from quotes: never trimmed
  bool in_quotes = false;  // inside a quoted part
  bool started = false;    // the field has a non-blank character or a quote
  size_t open_at = 0;
  auto finish = [&]() {
    size_t b = cur.size();
    while (b > keep && (cur[b - 1] == ' ' || cur[b - 1] == '\t')) --b;
    cur.resize(b);
    out.push_back(cur);
    cur.clear();
    keep = 0;
    started = false;
  };
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_quotes) {
      if (c != '"') {
        cur += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else {
        in_quotes = false;
        keep = cur.size();
      }
    } else if (c == ',') {
      finish();
    } else if (c == '"' && !started) {
      in_quotes = true;
      started = true;
      open_at = i;
    } else if (started || (c != ' ' && c != '\t')) {
      cur += c;
      started = true;
    }
  }
  if (in_quotes) return int(open_at) + 1;
  finish();
  return 0;
}

std::string csv_quote(const std::string& field) {
  // a cell a spreadsheet would run as a formula is written as text (OWASP: a leading ')
  const std::string s = csv_formula_like(field) ? "'" + field : field;
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string CsvReader::lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

namespace {

// Whether a quoted field is still open after `line`, scanning on from the state at its start
// (split_csv_line's rules: a quote opens a field only as its first non-blank character).
struct QuoteState {
  bool in_quotes = false, started = false;
  void feed(std::string_view line) {
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (in_quotes) {
        if (c == '"' && i + 1 < line.size() && line[i + 1] == '"')
          ++i;
        else if (c == '"')
          in_quotes = false;
      } else if (c == ',') {
        started = false;
      } else if (c == '"' && !started) {
        in_quotes = started = true;
      } else if (c != ' ' && c != '\t') {
        started = true;
      }
    }
  }
};
}  // namespace

CsvReader::CsvReader(std::istream& in, std::string path, const std::string& if_empty)
    : in_(in), path_(std::move(path)) {
  // blank lines before the header are skipped, as they are between rows
  bool got = read_record();
  while (got && cur_.find_first_not_of(" \t\r") == std::string_view::npos) got = read_record();
  if (!got) throw InputError(Location{path_, 1, 0, ""}, if_empty);
  header_ = std::string(cur_);
  for (const std::string_view v : views()) names_.emplace_back(v);
  for (size_t i = 0; i < names_.size(); ++i) {
    const std::string key = lower(names_[i]);
    // two columns of one name: which one a reader meant is anyone's guess
    if (!key.empty() && col_.count(key))
      throw InputError(Location{path_, line_, 0, header_},
                       "column '" + names_[i] + "' is in the header twice (fields " + std::to_string(col_[key] + 1) +
                           " and " + std::to_string(i + 1) + "): rename or drop one");
    col_[key] = i;
  }
  n_columns_ = names_.size();
}

bool CsvReader::read_line(std::string_view& line) {
  constexpr size_t kBlock = size_t(1) << 16;
  for (;;) {
    const char* from = buf_.get() + pos_;
    if (const void* nl = pos_ < end_ ? std::memchr(from, '\n', end_ - pos_) : nullptr) {
      const size_t n = size_t(static_cast<const char*>(nl) - from);
      line = std::string_view(from, n);
      pos_ += n + 1;
      return true;
    }
    if (eof_) {
      if (pos_ == end_) return false;
      line = std::string_view(from, end_ - pos_);  // a last line without '\n'
      pos_ = end_;
      return true;
    }
    // keep the partial line, and make room for a block after it (a longer line grows the buffer)
    const size_t keep = end_ - pos_;
    if (keep + kBlock > cap_) {
      const size_t cap = std::max(2 * cap_, keep + kBlock);
      std::unique_ptr<char[]> grown(new char[cap]);
      if (keep > 0) std::memcpy(grown.get(), from, keep);
      buf_ = std::move(grown);
      cap_ = cap;
    } else if (keep > 0) {
      std::memmove(buf_.get(), from, keep);
    }
    pos_ = 0;
    end_ = keep;
    quote_known_ = false;
    in_.read(buf_.get() + end_, std::streamsize(kBlock));
    const size_t got = size_t(in_.gcount());
    end_ += got;
    if (got < kBlock) eof_ = true;
  }
}

bool CsvReader::has_quote(std::string_view line) {
  const size_t from = size_t(line.data() - buf_.get());
  if (!quote_known_ || quote_at_ < from) {
    const void* q = std::memchr(line.data(), '"', end_ - from);
    quote_at_ = q ? size_t(static_cast<const char*>(q) - buf_.get()) : end_;
    quote_known_ = true;
  }
  return quote_at_ < from + line.size();
}

bool CsvReader::read_record() {
  std::string_view first;
  if (!read_line(first)) return false;
  fields_made_ = views_made_ = false;
  line_ = ++read_;
  const bool quoted = has_quote(first);
  if (!first.empty() && first.back() == '\r') first.remove_suffix(1);
  if (read_ == 1 && first.substr(0, 3) == "\xEF\xBB\xBF") first.remove_prefix(3);
  if (!quoted) {
    cur_ = first;
    return true;
  }
  // a quoted field may hold line breaks (csv_quote writes them): the record goes on to its close
  text_.assign(first);
  QuoteState q;
  q.feed(text_);
  std::string_view line;
  while (q.in_quotes && read_line(line)) {
    ++read_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t at = text_.size() + 1;
    text_ += '\n';
    text_ += line;
    q.feed(std::string_view(text_).substr(at));
  }
  cur_ = text_;
  const std::string& text = text_;
  if (const int open = split_csv_line(text, quoted_)) {
    // located at the opening quote: its line of the record, and its column there
    const size_t at = size_t(open) - 1, bol = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    const size_t from = bol == std::string::npos ? 0 : bol + 1;
    const int line_no = line_ + int(std::count(text.begin(), text.begin() + long(from), '\n'));
    const std::string src = text.substr(from, text.find('\n', from) - from);
    throw InputError(Location{path_, line_no, int(at - from) + 1, src}, "unterminated quoted field (no closing \")");
  }
  views_.assign(quoted_.begin(), quoted_.end());
  views_made_ = true;
  return true;
}

const std::vector<std::string_view>& CsvReader::views() const {
  if (!views_made_) {
    split_plain(cur_, views_);
    views_made_ = true;
  }
  return views_;
}

const std::vector<std::string>& CsvReader::fields() const {
  if (!fields_made_) {
    views();
    fields_.assign(views_.begin(), views_.end());
    fields_made_ = true;
  }
  return fields_;
}

bool CsvReader::next_row() {
  while (read_record()) {
    if (!cur_.empty() && cur_[0] != ' ' && cur_[0] != '\t') return true;  // no scan for most rows
    if (cur_.find_first_not_of(" \t") != std::string_view::npos) return true;
  }
  return false;
}

bool CsvReader::next() {
  if (!next_row()) return false;
  // a missing field reads as "", which would pass for a value left out on purpose
  if (views().size() < n_columns_)
    fail("the header has " + std::to_string(n_columns_) + " fields, this row " + std::to_string(views_.size()) +
         ": leave a value out as an empty field (,,), not by ending the row early");
  // and a value past the header's columns belongs to none: a row shifted by a stray comma
  for (size_t i = n_columns_; i < views_.size(); ++i)
    if (views_[i].find_first_not_of(" \t") != std::string_view::npos)
      fail("the header has " + std::to_string(n_columns_) + " fields, this row " + std::to_string(views_.size()) +
           " with a value in field " + std::to_string(i + 1) +
           ", which no column names (a comma inside a value needs the value in double quotes)");
  return true;
}

std::string CsvReader::get(const std::string& column) const {
  auto it = col_.find(lower(column));
  return it == col_.end() || it->second >= views().size() ? std::string() : std::string(views_[it->second]);
}

void CsvReader::fail(const std::string& message) const { throw InputError(Location{path_, line_, 0, text()}, message); }

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
    fail("column " + column + ": expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
         "], not '" + get(column) + "'");
  return (long long)v;
}

}  // namespace fleetsim
