// Input errors: what is wrong, where (file:line:column), why, and what to do instead.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace fleetsim {

struct Location {
  std::string file;         // a path, "<built-in default>", or "--set"
  int line = 0;             // 1-based; 0 when unknown
  int column = 0;           // 1-based; 0 when unknown
  std::string source_line;  // the text of that line, for a caret
};

// `input`: a value that is wrong on its own (unknown key, wrong type, out of range).
// `inconsistent`: values that contradict each other (max_batched_tokens < max_num_seqs).
// `does_not_fit`: a well-formed configuration the catalog says cannot work.
// A sweep reports the last two as infeasible configurations instead of failing.
enum class ErrorKind { input, inconsistent, does_not_fit };

class InputError : public std::runtime_error {
 public:
  InputError(Location where, const std::string& message, ErrorKind kind = ErrorKind::input)
      : std::runtime_error(message), where_(std::move(where)), kind_(kind) {}
  const Location& where() const { return where_; }
  ErrorKind kind() const { return kind_; }
  // "file:line:col: error: message" on one line
  std::string one_line() const;
  // the offending source line and a caret under the column, or "" when unknown
  std::string caret() const;

 private:
  Location where_;
  ErrorKind kind_;
};

// Closest candidate by edit distance, or "" if none is close enough to suggest.
std::string did_you_mean(const std::string& word, const std::initializer_list<const char*>& candidates);
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace fleetsim
