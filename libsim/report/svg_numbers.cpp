// Numbers for people (num, usd, seconds, percent) and HTML escaping: every text the report draws
// passes through here.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/html.hpp"
#include "report/svg_internal.hpp"

namespace fleetsim {

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace fleetsim

namespace fleetsim::svg {

const std::string kDash = "\xe2\x80\x93";  // en dash: a value that is not there

namespace parts {

std::string group_thousands(std::string s) {
  const size_t start = !s.empty() && s[0] == '-' ? 1 : 0;
  const size_t dot = std::min(s.find('.'), s.size());
  for (size_t i = dot; i > start + 3; i -= 3) s.insert(i - 3, ",");
  return s;
}

std::string strip_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

}  // namespace parts

using namespace parts;

std::string num(double v, int sig) {
  if (!std::isfinite(v)) return kDash;
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e15 || a < 1e-6) return fmt::format("{:.{}g}", v, sig);
  const int decimals = std::max(0, sig - 1 - int(std::floor(std::log10(a))));
  return group_thousands(strip_zeros(fmt::format("{:.{}f}", v, decimals)));
}

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return kDash;
  return group_thousands(fmt::format("{:.{}f}", v, decimals));
}

std::string usd_rate(double v) {
  if (!std::isfinite(v)) return kDash;
  return (v < 0 ? "-$" : "$") + fixed(std::fabs(v), 3);
}

std::string usd(double v) {
  if (!std::isfinite(v)) return kDash;
  const std::string sign = v < 0 ? "-$" : "$";
  const double a = std::fabs(v);
  if (a == 0) return "$0";
  if (a >= 1e5) return sign + group_thousands(fmt::format("{:.0f}", a));
  if (a >= 1) return sign + group_thousands(fmt::format("{:.2f}", a));
  // money in plain decimals however small, to three significant digits
  if (a < 1e-6) return sign + strip_zeros(fmt::format("{:.{}f}", a, std::min(30, 2 - int(std::floor(std::log10(a))))));
  std::string s = num(a, 3);
  const size_t dot = s.find('.');
  if (dot == std::string::npos || s.size() - dot - 1 < 2) s = fmt::format("{:.2f}", a);  // cents: $0.50
  return sign + s;
}

std::string seconds(double v) {
  if (!std::isfinite(v)) return kDash;
  const double a = std::fabs(v);
  if (a == 0) return "0 s";
  if (a < 1e-3) return num(v * 1e6) + " \xc2\xb5s";
  if (a < 1) return num(v * 1e3) + " ms";
  if (a < 120) return num(v) + " s";
  if (a < 7200) return num(v / 60) + " min";
  return num(v / 3600) + " h";
}

std::string seconds_axis(double v) {
  if (!std::isfinite(v)) return kDash;
  const double a = std::fabs(v);
  if (a == 0) return "0";
  if (a < 1e-3) return num(v * 1e6) + " \xc2\xb5s";
  if (a < 1) return num(v * 1e3) + " ms";
  return num(v) + " s";
}

std::string percent(double fraction, int sig) {
  if (!std::isfinite(fraction)) return kDash;
  return num(100 * fraction, sig) + "%";
}

}  // namespace fleetsim::svg
