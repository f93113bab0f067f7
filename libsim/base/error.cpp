#include "base/error.hpp"

#include <algorithm>

#include "base/text.hpp"

namespace fleetsim {

std::string InputError::one_line() const {
  // a message quotes input: a control character in it must not reach the terminal as one
  std::string loc = where_.file.empty() ? std::string("fleetsim") : printable(where_.file);
  if (where_.line > 0) {
    loc += ":" + std::to_string(where_.line);
    if (where_.column > 0) loc += ":" + std::to_string(where_.column);
  }
  return loc + ": error: " + printable(what());
}

std::string InputError::caret() const {
  if (where_.source_line.empty() || where_.column <= 0) return "";
  std::string pad;
  for (int i = 1; i < where_.column && i <= int(where_.source_line.size()); ++i)
    pad += where_.source_line[size_t(i - 1)] == '\t' ? '\t' : ' ';
  if (has_control(where_.source_line, true)) return printable(where_.source_line);  // no caret: columns moved
  return where_.source_line + "\n" + pad + "^";
}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  // a key with its unit left off (rate for rate_per_s, duration for duration_s): the shortest
  // candidate that goes on from the word at a '_'
  std::string prefixed;
  if (word.size() >= 3)
    for (const auto& c : candidates)
      if (c.size() > word.size() && c.compare(0, word.size(), word) == 0 && c[word.size()] == '_' &&
          (prefixed.empty() || c.size() < prefixed.size()))
        prefixed = c;
  if (!prefixed.empty()) return prefixed;
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::initializer_list<const char*>& candidates) {
  return did_you_mean(word, std::vector<std::string>(candidates.begin(), candidates.end()));
}

}  // namespace fleetsim
