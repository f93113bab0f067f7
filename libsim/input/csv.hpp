// A CSV file with a header row, read row by row with fields looked up by column name: the
// benchmark results and step timings `fleetsim fit` reads. Errors are located InputErrors
// (file:line and the line's text).
#pragma once
#include <istream>
#include <map>
#include <string>
#include <vector>

namespace fleetsim {

// One CSV field as written: quoted (RFC 4180) when it holds a comma, a quote or a line break.
std::string csv_quote(const std::string& field);

class CsvReader {
 public:
  // Reads the header from `in` (a byte-order mark and CRLF endings are accepted). Column names
  // are matched without regard to case. A quoted field may hold commas, "" for a quote and line
  // breaks (RFC 4180), as csv_quote writes them.
  CsvReader(std::istream& in, std::string path);
  bool has(const std::string& column) const { return col_.count(column) > 0; }
  // The next non-blank record; false at the end. A record with fewer fields than the header is
  // an error (more are allowed: trailing notes).
  bool next();
  // A field of the current row, "" when absent.
  std::string get(const std::string& column) const;
  // A number >= 0 ("inf" allowed), NaN when the field is empty; an error otherwise.
  double number(const std::string& column) const;
  // An integer in [lo, hi], `dflt` when the field is empty; an error otherwise.
  long long integer(const std::string& column, long long lo, long long hi, long long dflt) const;
  [[noreturn]] void fail(const std::string& message) const;
  std::string where() const { return path_ + ":" + std::to_string(line_); }
  const std::string& header_line() const { return header_; }

 private:
  // The next record (one line, or more when a quoted field holds line breaks) split into fields;
  // false at the end. Sets line_ to its first line.
  bool read_record(std::string& text, std::vector<std::string>& fields);

  std::istream& in_;
  std::string path_, header_, text_;
  int line_ = 1, read_ = 0;  // the current record's first line; the lines read
  std::map<std::string, size_t> col_;
  size_t n_columns_ = 0;
  std::vector<std::string> fields_;
};

}  // namespace fleetsim
