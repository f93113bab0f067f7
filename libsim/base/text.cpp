#include "base/text.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace fleetsim {

namespace {
bool c0(unsigned char c) { return c < 0x20 || c == 0x7f; }
bool c1_at(const std::string& s, size_t i) {  // U+0080-U+009F: C2 80 .. C2 9F in UTF-8
  return static_cast<unsigned char>(s[i]) == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
         static_cast<unsigned char>(s[i + 1]) <= 0x9F;
}
}  // namespace

bool has_control(const std::string& s, bool tab_ok) {
  for (size_t i = 0; i < s.size(); ++i)
    if ((c0(static_cast<unsigned char>(s[i])) && !(tab_ok && s[i] == '\t')) || c1_at(s, i)) return true;
  return false;
}

std::string printable(const std::string& s) {
  if (!has_control(s)) return s;
  std::string o;
  o.reserve(s.size() + 8);
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c1_at(s, i)) {
      o += fmt::format("\\u{{{:02X}}}", static_cast<unsigned char>(s[i + 1]));
      ++i;
    } else if (!c0(c)) {
      o += char(c);
    } else if (c == '\n') {
      o += "\\n";
    } else if (c == '\r') {
      o += "\\r";
    } else if (c == '\t') {
      o += "\\t";
    } else if (c == 0x1b) {
      o += "\\e";
    } else {
      o += fmt::format("\\x{:02X}", c);
    }
  }
  return o;
}

std::string markdown_cell(const std::string& s) {
  std::string o;
  for (char c : printable(s)) o += c == '|' ? std::string("\\|") : std::string(1, c);
  return o;
}

bool csv_formula_like(const std::string& s) {
  if (s.empty()) return false;
  const char c = s[0];
  if (c != '=' && c != '+' && c != '-' && c != '@' && c != '\t' && c != '\r') return false;
  // a number (-0.5, +3e-2) is data, not a formula
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  (void)v;
  const bool number = (c == '-' || c == '+') && end == s.c_str() + s.size() && end != s.c_str() + 1;
  return !number;
}

}  // namespace fleetsim
