#include "input/json_text.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "base/error.hpp"

namespace fleetsim {

namespace {

// Finds where nlohmann's parser gave up: the byte offset and what went wrong.
struct ErrorLocator : JsonSaxWatch<Json> {
  size_t position = 0;
  std::string token, message;
  int id = 0;
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

// A walk over valid JSON text, by byte offset.
struct JsonWalk {
  const std::string& t;
  size_t i = 0;
  void ws() {
    while (i < t.size() && (t[i] == ' ' || t[i] == '\t' || t[i] == '\n' || t[i] == '\r')) ++i;
  }
  // the raw text of a string at i (escapes kept), i past its closing quote
  std::string str() {
    std::string out;
    for (++i; i < t.size() && t[i] != '"'; ++i) {
      if (t[i] == '\\' && i + 1 < t.size()) out += t[i++];
      out += t[i];
    }
    ++i;
    return out;
  }
  void skip_value() {
    ws();
    if (i >= t.size()) return;
    if (t[i] == '"') {
      str();
    } else if (t[i] == '{' || t[i] == '[') {
      int depth = 0;
      for (; i < t.size(); ++i) {
        if (t[i] == '"') {
          str();
          --i;
        } else if (t[i] == '{' || t[i] == '[') {
          ++depth;
        } else if ((t[i] == '}' || t[i] == ']') && --depth == 0) {
          ++i;
          return;
        }
      }
    } else {
      while (i < t.size() && t[i] != ',' && t[i] != '}' && t[i] != ']' && t[i] != ' ' && t[i] != '\n') ++i;
    }
  }
  // from the value at i, to its member `key`; false if absent
  bool member(const std::string& key) {
    ws();
    if (i >= t.size() || t[i] != '{') return false;
    ++i;
    for (;;) {
      ws();
      if (i >= t.size() || t[i] != '"') return false;
      const bool found = str() == key;
      ws();
      ++i;  // ':'
      ws();
      if (found) return true;
      skip_value();
      ws();
      if (i >= t.size() || t[i] != ',') return false;
      ++i;
    }
  }
  // from the array at i, to its element n; false if absent
  bool element(size_t n) {
    ws();
    if (i >= t.size() || t[i] != '[') return false;
    ++i;
    for (size_t k = 0;; ++k) {
      ws();
      if (i >= t.size() || t[i] == ']') return false;
      if (k == n) return true;
      skip_value();
      ws();
      if (i >= t.size() || t[i] != ',') return false;
      ++i;
    }
  }
};

Location location_at(const std::string& text, const std::string& file, size_t at, int first_line) {
  at = std::min(at, text.size());
  int line = first_line;
  size_t line_start = 0;
  for (size_t i = 0; i < at; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  const size_t line_end = std::min(text.find('\n', line_start), text.size());
  return Location{file, line, int(at - line_start) + 1,
                  text.substr(line_start, std::min<size_t>(line_end - line_start, 200))};
}

}  // namespace

Location json_field_location(const std::string& text, const std::string& file, const std::string& field) {
  JsonWalk w{text};
  size_t p = 0;
  while (p < field.size()) {
    size_t end = field.find_first_of(".[", p);
    if (end == std::string::npos) end = field.size();
    if (end > p && !w.member(field.substr(p, end - p))) return location_at(text, file, 0, 1);
    p = end;
    while (p < field.size() && field[p] == '[') {
      const size_t close = field.find(']', p);
      if (close == std::string::npos || close == p + 1) {  // "[]": the array itself
        p = close == std::string::npos ? field.size() : close + 1;
        break;
      }
      size_t n = 0;
      for (size_t k = p + 1; k < close; ++k)
        n = field[k] >= '0' && field[k] <= '9' ? n * 10 + size_t(field[k] - '0') : size_t(-1);
      if (!w.element(n)) return location_at(text, file, 0, 1);
      p = close + 1;
    }
    if (p < field.size() && field[p] == '.') ++p;
  }
  w.ws();
  return location_at(text, file, w.i, 1);
}

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
  const Location where = location_at(text, file, at, first_line);
  std::string msg = loc.id == 406 ? fmt::format("number out of range (beyond a double): {}", loc.token)
                                  : "not valid JSON: " + plain_message(loc.message);
  for (char& c : msg)
    if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f) c = '?';  // one printable line
  throw InputError(where, msg);
}

}  // namespace fleetsim
