// Input errors: what is wrong, where (file:line:column), why, and what to do instead.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace fleetsim {

struct Location {
  std::string file;  // a path, "<built-in default>", or "--set"
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown
  std::string source_line;  // the text of that line, for a caret
};

class InputError : public std::runtime_error {
 public:
  InputError(Location where, const std::string& message)
      : std::runtime_error(message), where_(std::move(where)) {}
  const Location& where() const { return where_; }
  // "file:line:col: error: message" on one line
  std::string one_line() const;
  // the offending source line and a caret under the column, or "" when unknown
  std::string caret() const;

 private:
  Location where_;
};

// Closest candidate by edit distance, or "" if none is close enough to suggest.
std::string did_you_mean(const std::string& word, const std::initializer_list<const char*>& candidates);
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace fleetsim
