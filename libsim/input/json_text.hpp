// JSON text from a file a user gave (a shard, a run document, a journal line, a benchmark result):
// parsed with every failure located at its line and column, a number beyond a double included.
#pragma once
#include <string>

#include "base/error.hpp"
#include "base/json.hpp"

namespace fleetsim {

// Parse JSON text; a syntax error or an out-of-range number is an InputError located at
// file:line:column (line counted from first_line).
Json parse_json_located(const std::string& text, const std::string& file, int first_line = 1);

// Where the value at `field` lies in valid JSON text: a path of keys and indices, as
// "benchmarks[2].metrics.ttft.mean" (a trailing "[]": the array itself). The file's first line
// where the path is not found.
Location json_field_location(const std::string& text, const std::string& file, const std::string& field);

}  // namespace fleetsim
