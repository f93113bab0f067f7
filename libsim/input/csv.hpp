// The one CSV reader: every CSV file fleetsim reads (request traces, empirical length columns,
// the benchmark results and step timings `fleetsim fit` reads) goes through CsvReader. A header
// row, then records read one at a time, with fields by column name or by index. Errors are
// located InputErrors (file:line and the line's text).
#pragma once
#include <istream>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fleetsim {

// One CSV line into fields. A field may be quoted: inside quotes a comma is data and "" is one
// quote. Spaces and tabs around a field (outside its quotes) are dropped. A quote inside an
// unquoted field is kept as a character. Returns 0, or the 1-based column of an opening quote
// that is never closed.
int split_csv_line(const std::string& line, std::vector<std::string>& fields);

// One CSV field as written: quoted (RFC 4180) when it holds a comma, a quote or a line break;
// text a spreadsheet would run as a formula (csv_formula_like) gets a leading '.
std::string csv_quote(const std::string& field);

class CsvReader {
 public:
  // Reads the header from `in` (a byte-order mark and CRLF endings are accepted). Column names
  // are matched without regard to case. A quoted field may hold commas, "" for a quote and line
  // breaks (RFC 4180), as csv_quote writes them.
  // `if_empty` is the error for a file without a header row. It reads `in` ahead in 64 KiB
  // blocks: the stream belongs to the reader until its end (no caller reads past the CSV).
  CsvReader(std::istream& in, std::string path, const std::string& if_empty = "empty file: expected a CSV header");
  bool has(const std::string& column) const { return col_.count(lower(column)) > 0; }
  // The header's names as written (case kept), for layouts told apart by case.
  const std::vector<std::string>& header() const { return names_; }
  // The next non-blank record; false at the end. A record with fewer fields than the header is
  // an error (more are allowed: trailing notes).
  bool next();
  // The same, with no check of the field count: the caller checks the columns it uses.
  bool next_row();
  // The current record's fields: views valid until the next record (no copy per field, for large
  // traces), or as strings. A plain line is split when first asked for.
  const std::vector<std::string_view>& views() const;
  // The current record's text as read (its lines joined by '\n'), valid until the next record: for
  // a reader that parses the common row itself and asks for views() only when that fails.
  std::string_view record() const { return cur_; }
  const std::vector<std::string>& fields() const;
  int line() const { return line_; }  // the current record's first line (1: the header)
  std::string text() const { return std::string(cur_.substr(0, cur_.find('\n'))); }  // and its text
  // A field of the current row, "" when absent.
  std::string get(const std::string& column) const;
  // A number >= 0 ("inf" allowed), NaN when the field is empty; an error otherwise.
  double number(const std::string& column) const;
  // An integer in [lo, hi], `dflt` when the field is empty; an error otherwise.
  long long integer(const std::string& column, long long lo, long long hi, long long dflt) const;
  [[noreturn]] void fail(const std::string& message) const;
  std::string where() const { return path_ + ":" + std::to_string(line_); }
  const std::string& header_line() const { return header_; }
  static std::string lower(std::string s);

 private:
  // The next record (one line, or more when a quoted field holds line breaks) split into fields;
  // false at the end. Sets line_ to its first line and cur_ to its text.
  bool read_record();
  // The next line of the input without its '\n', as std::getline reads it: a view into the block
  // buffer, valid until the next call.
  bool read_line(std::string_view& line);
  // Whether `line` (a view read_line gave) holds a quote: one search per stretch of the buffer
  // without quotes, not one per line.
  bool has_quote(std::string_view line);

  std::istream& in_;
  std::string path_, header_;
  std::string text_;             // a record with quotes, as read (its lines joined by '\n')
  std::string_view cur_;         // the current record's text: into buf_ for a plain line, else text_
  std::unique_ptr<char[]> buf_;  // input read ahead of the current line: buf_[pos_, end_)
  size_t pos_ = 0, end_ = 0, cap_ = 0;
  size_t quote_at_ = 0;       // the first '"' in buf_ at or after where it was last searched from
  bool quote_known_ = false;  // quote_at_ holds for these bytes (a refill moves them)
  bool eof_ = false;
  int line_ = 1, read_ = 0;            // the current record's first line; the lines read
  std::map<std::string, size_t> col_;  // lower-cased names
  std::vector<std::string> names_;
  size_t n_columns_ = 0;
  mutable std::vector<std::string_view> views_;  // into buf_, or into quoted_ when the record has quotes
  mutable bool views_made_ = false;
  std::vector<std::string> quoted_;
  mutable std::vector<std::string> fields_;  // views_ as strings, made when asked for
  mutable bool fields_made_ = false;
};

}  // namespace fleetsim
