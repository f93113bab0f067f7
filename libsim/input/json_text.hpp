// JSON text from a file a user gave (a shard, a run document, a journal line, a benchmark result):
// parsed with every failure located at its line and column, a number beyond a double included.
#pragma once
#include <string>

#include "base/json.hpp"

namespace fleetsim {

// Parse JSON text; a syntax error or an out-of-range number is an InputError located at
// file:line:column (line counted from first_line).
Json parse_json_located(const std::string& text, const std::string& file, int first_line = 1);

}  // namespace fleetsim
