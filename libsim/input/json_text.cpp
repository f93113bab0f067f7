#include "input/json_text.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.hpp"

namespace fleetsim {

namespace {

// Finds where nlohmann's parser gave up: the byte offset and what went wrong.
struct ErrorLocator : nlohmann::json_sax<Json> {
  size_t position = 0;
  std::string token, message;
  int id = 0;
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
  bool parse_error(std::size_t pos, const std::string& last_token, const nlohmann::detail::exception& ex) override {
    position = pos;
    token = last_token;
    message = ex.what();
    id = ex.id;
    return false;
  }
};

// nlohmann's message without its "[json.exception...] parse error at line L, column C: " prefix.
std::string plain_message(std::string m) {
  if (!m.empty() && m[0] == '[') {
    const size_t close = m.find("] ");
    if (close != std::string::npos) m = m.substr(close + 2);
  }
  if (m.rfind("parse error", 0) == 0) {
    const size_t colon = m.find(": ");
    if (colon != std::string::npos) m = m.substr(colon + 2);
  }
  return m;
}

}  // namespace

Json parse_json_located(const std::string& text, const std::string& file, int first_line) {
  try {
    return Json::parse(text);
  } catch (const Json::exception&) {
  }
  ErrorLocator loc;
  Json::sax_parse(text, &loc);
  // the offending character (a syntax error) or the start of the offending number, as line and column
  size_t at = loc.id == 406      ? loc.position - std::min(loc.position, loc.token.size())
              : loc.position > 0 ? loc.position - 1
                                 : 0;
  at = std::min(at, text.size());
  int line = first_line, column = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < at; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  column = int(at - line_start) + 1;
  const size_t line_end = std::min(text.find('\n', line_start), text.size());
  std::string src_line = text.substr(line_start, std::min<size_t>(line_end - line_start, 200));
  std::string msg = loc.id == 406 ? fmt::format("number out of range (beyond a double): {}", loc.token)
                                  : "not valid JSON: " + plain_message(loc.message);
  for (char& c : msg)
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) c = '?';  // one printable line
  throw InputError(Location{file, line, column, src_line}, msg);
}

}  // namespace fleetsim
