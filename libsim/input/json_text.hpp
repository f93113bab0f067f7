// JSON text from a file a user gave (a shard, a run document, a journal line, a benchmark result):
// parsed with every failure located at its line and column, a number beyond a double included.
#pragma once
#include <string>

#include "base/error.hpp"
#include "base/json.hpp"

namespace fleetsim {

// A SAX reader that accepts every event and stops at a syntax error: the base of readers that
// watch for one thing (a parse error's place, a key written twice) and override only that.
template <class J>
struct JsonSaxWatch : nlohmann::json_sax<J> {
  using typename nlohmann::json_sax<J>::number_integer_t;
  using typename nlohmann::json_sax<J>::number_unsigned_t;
  using typename nlohmann::json_sax<J>::number_float_t;
  using typename nlohmann::json_sax<J>::string_t;
  using typename nlohmann::json_sax<J>::binary_t;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }
};

// Parse JSON text; a syntax error or an out-of-range number is an InputError located at
// file:line:column (line counted from first_line).
Json parse_json_located(const std::string& text, const std::string& file, int first_line = 1);

// Where the value at `field` lies in valid JSON text: a path of keys and indices, as
// "benchmarks[2].metrics.ttft.mean" (a trailing "[]": the array itself). The file's first line
// where the path is not found.
Location json_field_location(const std::string& text, const std::string& file, const std::string& field);

}  // namespace fleetsim
