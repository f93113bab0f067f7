// Internal: YAML nodes that remember their dotted path and source, so that every validation
// error can say where (file:line:column, or the override that set the value) and what.
#pragma once
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>
#include <algorithm>
#include <cctype>
#include <cerrno>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/text.hpp"
#include "input/scenario.hpp"
#include "input/trace.hpp"

namespace fleetsim::detail {

// Traces and sampled means, shared by every instantiation of one scenario source.
struct LoadCache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const TraceData>> traces;
  std::map<std::string, double> means;
};

// The text a node came from, for locations.
struct Source {
  std::string file;
  std::string base_dir;
  std::vector<std::string> lines;
  std::map<std::string, Location> overridden;  // dotted path -> where its value came from
  std::vector<std::string> file_pools;         // the pools the text names, before any --set
  LoadCache* cache = nullptr;
  mutable std::vector<std::string> files_read;  // traces, length files, profiles: Scenario::inputs
};

// A YAML node with its dotted path, so errors can say where and what.
struct N {
  YAML::Node node;
  std::string path;
  const Source* src;

  Location where() const {
    // the most specific override covering this path (apply_override drops those a later one replaced)
    const Location* best = nullptr;
    size_t best_len = 0;
    for (const auto& [p, origin] : src->overridden)
      if ((path == p || path.rfind(p + ".", 0) == 0 || path.rfind(p + "[", 0) == 0) && (!best || p.size() > best_len)) {
        best = &origin;
        best_len = p.size();
      }
    if (best) return *best;
    Location l;
    l.file = src->file;
    if (node.IsDefined()) {
      const YAML::Mark m = node.Mark();
      if (m.line >= 0) {
        l.line = m.line + 1;
        l.column = m.column + 1;
        if (size_t(m.line) < src->lines.size()) l.source_line = src->lines[size_t(m.line)];
      }
    }
    return l;
  }
  [[noreturn]] void fail(const std::string& msg, ErrorKind kind = ErrorKind::input) const {
    throw InputError(where(), (path.empty() ? std::string() : path + ": ") + msg, kind);
  }
  bool has(const char* key) const { return node.IsMap() && node[key].IsDefined() && !node[key].IsNull(); }
  N at(const char* key) const {
    const std::string p = path.empty() ? key : path + "." + key;
    if (!node.IsMap()) fail("expected a mapping");
    return N{node[key], p, src};
  }
  // the location of a missing key is its parent map
  N req(const char* key) const {
    if (!has(key)) {
      const std::string msg = std::string("missing required key '") + key + "'";
      // (one a --set emptied is located at that --set)
      const auto o = src->overridden.find(path.empty() ? key : path + "." + key);
      if (o != src->overridden.end()) throw InputError(o->second, (path.empty() ? std::string() : path + ": ") + msg);
      fail(msg);
    }
    return at(key);
  }
  void require_map() const {
    if (!node.IsMap()) fail("expected a mapping of keys to values");
  }
  // A key of this mapping as a name: keys must be plain scalars (YAML allows lists as keys).
  std::string key_name(const YAML::Node& key) const {
    if (!key.IsScalar()) N{key, path, src}.fail("a key must be a plain name, not a list or a mapping");
    if (has_control(key.Scalar()))
      N{key, path, src}.fail("a key cannot hold a line break, tab or other control character: " +
                             printable(key.Scalar()));
    return key.Scalar();
  }
  void allow_keys(const std::vector<std::string>& keys) const {
    require_map();
    for (auto it = node.begin(); it != node.end(); ++it) {
      const std::string k = key_name(it->first);
      bool ok = false;
      for (const auto& a : keys) ok = ok || a == k;
      if (!ok) {
        N kn{it->first, path.empty() ? k : path + "." + k, src};
        std::string s = did_you_mean(k, keys);
        std::string all;
        for (const auto& a : keys) all += (all.empty() ? "" : ", ") + a;
        kn.fail("unknown key '" + k + "'" +
                (s.empty() ? " (expected one of: " + all + ")" : " (did you mean '" + s + "'?)"));
      }
    }
  }
  // A quoted scalar ("2", 'yes') is a string in YAML: taking it for a number or a boolean would
  // hide a type the writer chose.
  void not_quoted(const char* expected) const {
    if (node.IsScalar() && (node.Tag() == "!" || node.Tag() == "tag:yaml.org,2002:str"))
      fail(std::string("expected ") + expected + ", got the string \"" + node.Scalar() + "\" (remove the quotes)");
  }
  bool boolean() const {
    not_quoted("true or false");
    if (node.IsScalar()) {
      const std::string& v = node.Scalar();
      if (v == "true" || v == "yes" || v == "on") return true;
      if (v == "false" || v == "no" || v == "off") return false;
    }
    fail("expected true or false");
  }
  std::string str() const {
    if (!node.IsScalar()) fail("expected a string");
    return node.Scalar();
  }
  // A name: a label in reports and ledgers, so not empty.
  std::string name() const {
    const std::string s = str();
    if (s.find_first_not_of(" \t") == std::string::npos) fail("expected a name, got an empty string");
    if (has_control(s)) fail("a name cannot hold a line break, tab or other control character: " + printable(s));
    return s;
  }
  double num() const {
    if (!node.IsScalar()) fail("expected a number");
    not_quoted("a number");
    const std::string& s = node.Scalar();
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || !end || *end != '\0' || !std::isfinite(v)) fail("expected a number, got '" + s + "'");
    return v;
  }
  double num_in(double lo, double hi, const char* what = nullptr) const {
    const double v = num();
    if (!(v >= lo && v <= hi)) {
      std::ostringstream o;
      o << "value " << node.Scalar() << " is out of range (expected " << (what ? what : "a number") << " in [" << lo
        << ", " << hi << "])";
      fail(o.str());
    }
    return v;
  }
  double pos(double hi) const {  // > 0
    const double v = num();
    if (!(v > 0 && v <= hi)) {
      std::ostringstream o;
      o << "value " << node.Scalar() << " is out of range (expected a number > 0 and <= " << hi << ")";
      fail(o.str());
    }
    return v;
  }
  // Integers are read exactly (a double would round past 2^53), then range-checked.
  int64_t integer(int64_t lo, int64_t hi) const {
    if (!node.IsScalar()) fail("expected an integer");
    not_quoted("an integer");
    const std::string& str = node.Scalar();
    bool digits = !str.empty();
    for (size_t i = 0; i < str.size(); ++i)
      digits = digits && (std::isdigit((unsigned char)str[i]) || (i == 0 && str[i] == '-'));
    if (digits && str != "-") {
      errno = 0;
      char* end = nullptr;
      const long long x = std::strtoll(str.c_str(), &end, 10);
      if (errno == ERANGE || x < lo || x > hi)
        fail("value " + str + " is out of range (expected an integer in [" + std::to_string(lo) + ", " +
             std::to_string(hi) + "])");
      return int64_t(x);
    }
    const double v = num();
    if (v != std::floor(v)) fail("expected an integer, got '" + node.Scalar() + "'");
    if (v < double(lo) || v > double(hi))
      fail("value " + node.Scalar() + " is out of range (expected an integer in [" + std::to_string(lo) + ", " +
           std::to_string(hi) + "])");
    return int64_t(v);
  }
  // A 64-bit unsigned integer, read exactly (seeds).
  uint64_t unsigned_integer() const {
    if (!node.IsScalar()) fail("expected an integer");
    not_quoted("an integer");
    const std::string& str = node.Scalar();
    bool digits = !str.empty();
    for (char c : str) digits = digits && std::isdigit((unsigned char)c);
    if (!digits) fail("expected an integer in [0, 18446744073709551615], got '" + str + "'");
    errno = 0;
    const unsigned long long x = std::strtoull(str.c_str(), nullptr, 10);
    if (errno == ERANGE) fail("value " + str + " is out of range (expected an integer in [0, 18446744073709551615])");
    return uint64_t(x);
  }
  std::string choice(const std::vector<std::string>& options) const {
    const std::string s = str();
    for (const auto& o : options)
      if (o == s) return s;
    std::string all;
    for (const auto& o : options) all += (all.empty() ? "" : ", ") + o;
    const std::string sug = did_you_mean(s, options);
    fail("unknown value '" + s + "' (expected one of: " + all + ")" +
         (sug.empty() ? "" : "; did you mean '" + sug + "'?"));
  }
};

// Offset of the first byte that breaks UTF-8 (overlong forms, surrogates and code points past
// U+10FFFF included), or npos. YAML is UTF-8, and names end up in JSON, which must be too.
inline size_t invalid_utf8_at(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = (unsigned char)s[i];
    int n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) {
      n = 1;
      cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2;
      cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3;
      cp = c & 0x07;
    } else
      return i;
    for (int k = 1; k <= n; ++k) {
      if (i + size_t(k) >= s.size()) return i;
      const unsigned char d = (unsigned char)s[i + size_t(k)];
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    static const uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += size_t(n) + 1;
  }
  return std::string::npos;
}

inline std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::string cur;
  for (char c : text) {
    if (c == '\n') {
      lines.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur += c;
    }
  }
  lines.push_back(cur);
  return lines;
}

inline Location location_of(const YAML::Mark& m, const Source& src) {
  Location l{src.file, m.line + 1, m.column + 1, ""};
  if (m.line >= 0 && size_t(m.line) < src.lines.size()) l.source_line = src.lines[size_t(m.line)];
  return l;
}

// yaml-cpp keeps an alias (*a) as a second reference to its anchor's node, so `&a {b: *a}` is a
// loop every walk of the tree would follow without end, and a few lines of nested aliases ("billion
// laughs") stand for billions of nodes. Each tree is measured once, aliases expanded, before
// anything else walks it; every later walk is then bounded by these caps
// (docs/scenario-reference.md, "Limits").
constexpr int kMaxYamlDepth = 64;
constexpr int64_t kMaxYamlNodes = 200000;

struct YamlFault {
  YAML::Mark at;
  std::string what;
};

// `at`: where `n` is written (its key in a mapping); `top`: the key under the root it is inside,
// where a size past the cap is reported (the alias that blows up is written there).
inline bool yaml_bounds_walk(const YAML::Node& n, const YAML::Mark& at, const YAML::Mark& top,
                             std::vector<YAML::Node>& path, int64_t& count, YamlFault& fault) {
  if (++count > kMaxYamlNodes) {
    fault = {top, "the document stands for more than " + std::to_string(kMaxYamlNodes) +
                      " YAML nodes once its aliases (*name) are expanded; fleetsim reads at most that"};
    return true;
  }
  if (!n.IsMap() && !n.IsSequence()) return false;
  for (const auto& p : path)
    if (p.is(n)) {
      fault = {at, "an alias (*name) refers to a mapping or list that holds it: a value cannot contain itself"};
      return true;
    }
  if (int(path.size()) >= kMaxYamlDepth) {
    fault = {at, "nested more than " + std::to_string(kMaxYamlDepth) + " levels deep"};
    return true;
  }
  const bool root = path.empty();
  path.push_back(n);
  if (n.IsSequence()) {
    for (const auto& item : n) {
      const YAML::Mark m = item.Mark().line >= 0 ? item.Mark() : at;
      if (yaml_bounds_walk(item, m, root ? m : top, path, count, fault)) return true;
    }
  } else {
    for (auto it = n.begin(); it != n.end(); ++it) {
      const YAML::Mark k = it->first.Mark().line >= 0 ? it->first.Mark() : at;
      const YAML::Mark t = root ? k : top;
      if (yaml_bounds_walk(it->first, k, t, path, count, fault) ||
          yaml_bounds_walk(it->second, k, t, path, count, fault))
        return true;
    }
  }
  path.pop_back();
  return false;
}

// A loop, depth or size past the caps: the first such place and what is wrong there.
inline bool yaml_out_of_bounds(const YAML::Node& root, YamlFault& fault) {
  std::vector<YAML::Node> path;
  int64_t count = 0;
  const YAML::Mark m = root.IsDefined() ? root.Mark() : YAML::Mark();
  return yaml_bounds_walk(root, m, m, path, count, fault);
}

// A key written twice in one mapping: YAML parsers keep one of them silently, so the other
// setting would be ignored without a word. Finds the first such repeat (its key and mark, and
// the line of the first writing).
inline bool find_repeated_key(const YAML::Node& n, std::string& key, YAML::Mark& at, int& first_line) {
  if (n.IsSequence())
    for (const auto& item : n)
      if (find_repeated_key(item, key, at, first_line)) return true;
  if (!n.IsMap()) return false;
  std::map<std::string, int> seen;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (it->first.IsScalar()) {
      const auto [prev, fresh] = seen.emplace(it->first.Scalar(), it->first.Mark().line + 1);
      if (!fresh) {
        key = it->first.Scalar();
        at = it->first.Mark();
        first_line = prev->second;
        return true;
      }
    }
    if (find_repeated_key(it->second, key, at, first_line)) return true;
  }
  return false;
}

// The 1-based line where a second YAML document starts (a `---` after the first document's
// content, or content after a `...` end marker), or 0 when there is none. Read from the text:
// YAML::LoadAll can loop without end on some malformed input (found by fuzzing), and a marker at
// the start of a line cannot be inside a scalar of a mapping document.
inline int second_document_line(const std::vector<std::string>& lines) {
  bool content = false, ended = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    auto marker = [&](const char* m) {
      return l.compare(0, 3, m) == 0 && (l.size() == 3 || l[3] == ' ' || l[3] == '\t');
    };
    const size_t first = l.find_first_not_of(" \t");
    if (marker("---")) {
      if (content || ended) return int(i) + 1;
      const size_t rest = l.find_first_not_of(" \t", 3);
      content = rest != std::string::npos && l[rest] != '#';
      continue;
    }
    if (marker("...")) {
      ended = true;
      continue;
    }
    if (first == std::string::npos || l[first] == '#' || (!content && !ended && l[0] == '%')) continue;
    if (ended) return int(i) + 1;
    content = true;
  }
  return 0;
}

// Parse YAML text: one document, no key twice in a mapping. A syntax error, a second document or
// a repeated key becomes an InputError located in `src` (with its line's text).
inline YAML::Node load_located(const std::string& text, const Source& src) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {  // the parser's own guard, far past the limit below
    throw InputError(location_of(e.mark, src), "nested more than " + std::to_string(kMaxYamlDepth) + " levels deep");
  } catch (const YAML::ParserException& e) {
    throw InputError(location_of(e.mark, src), "malformed YAML: " + e.msg);
  }
  const std::vector<std::string> lines = split_lines(text);
  if (!root.IsDefined() || root.IsNull()) {
    // yaml-cpp gives an empty document for some malformed text (a line that starts with ','): a
    // file with content that reads as nothing is malformed, not empty
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      const size_t first = l.find_first_not_of(" \t");
      if (first == std::string::npos || l[first] == '#' || l.compare(0, 3, "---") == 0 || l.compare(0, 3, "...") == 0 ||
          l[0] == '%')
        continue;
      if (l.compare(first, 4, "null") == 0 || l[first] == '~') break;  // an explicit null is a null
      YAML::Mark m;
      m.line = int(i);
      m.column = int(first);
      throw InputError(location_of(m, src), "malformed YAML: this text reads as no document at all");
    }
  }
  if (const int line = second_document_line(lines)) {
    YAML::Mark m;
    m.line = line - 1;
    m.column = 0;
    throw InputError(
        location_of(m, src),
        "a second YAML document (after '---' or '...'): a file holds one; remove the marker or split the file");
  }
  if (YamlFault f; yaml_out_of_bounds(root, f)) throw InputError(location_of(f.at, src), f.what);
  std::string key;
  YAML::Mark at;
  int first_line = 0;
  if (find_repeated_key(root, key, at, first_line))
    throw InputError(location_of(at, src), "key '" + key + "' is written twice in this mapping (first on line " +
                                               std::to_string(first_line) + "); keep one");
  return root;
}

// Apply one override to the YAML tree.
inline void apply_override(YAML::Node root, const Override& o, Source& src) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : o.path) {
    if (c == '.') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  for (const auto& p : parts)
    if (p.empty()) throw InputError(o.origin, "empty key in path '" + o.path + "'");
  if (o.value.find_first_not_of(" \t") == std::string::npos)
    throw InputError(o.origin, "no value after '=' (expected e.g. " + o.path + "=2; to remove a key, edit the file)");
  YAML::Node value_node;
  try {
    value_node = YAML::Load(o.value);
  } catch (const YAML::Exception& e) {
    throw InputError(o.origin, "value is not valid YAML: " + e.msg);
  }
  // YAML::Load reads the first document only: the rest would be dropped without a word
  if (second_document_line(split_lines(o.value)) > 0)
    throw InputError(o.origin, "value holds a second YAML document (after '---' or '...'): give one value");
  if (YamlFault f; yaml_out_of_bounds(value_node, f)) throw InputError(o.origin, "value: " + f.what);
  {
    std::string key;
    YAML::Mark at;
    int first_line = 0;
    if (find_repeated_key(value_node, key, at, first_line))
      throw InputError(o.origin, "key '" + key + "' is written twice in the value; keep one");
  }
  // Names may hold dots (llama-3.1-8b): at each level take the longest run of parts that is an
  // existing key; a catalog entry not yet in the file is catalog.models.NAME.FIELD.
  auto join = [&](size_t a, size_t b) {
    std::string k = parts[a];
    for (size_t i = a + 1; i < b; ++i) k += "." + parts[i];
    return k;
  };
  std::vector<std::string> keys;
  {
    YAML::Node probe = root;
    size_t i = 0;
    while (i < parts.size()) {
      size_t take = 1;
      if (probe.IsMap())
        for (size_t j = parts.size(); j > i + 1; --j)
          if (probe[join(i, j)].IsDefined()) {
            take = j - i;
            break;
          }
      const bool catalog = keys.size() == 2 && keys[0] == "catalog" && (keys[1] == "models" || keys[1] == "devices");
      if (take == 1 && catalog && parts.size() - i >= 2)
        // NAME with dots, then one FIELD; a mapping value is a whole entry (no field is a mapping)
        take = value_node.IsMap() ? parts.size() - i : parts.size() - i > 2 ? parts.size() - i - 1 : 1;
      // a sweep parameter's name is itself a dotted scenario path, an SLO term's a report path
      if (take == 1 && keys.size() == 2 && keys[0] == "sweep" && (keys[1] == "parameters" || keys[1] == "slo"))
        take = parts.size() - i;
      keys.push_back(join(i, i + take));
      if (probe.IsMap() && probe[keys.back()].IsDefined())
        probe.reset(probe[keys.back()]);
      else
        probe.reset(YAML::Node());
      i += take;
    }
  }
  YAML::Node node = root;
  std::string at;  // the dotted path of `node`'s child being walked
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    if (!node.IsMap())
      throw InputError(o.origin, "'" + keys[i - 1] + "' is not a mapping, so it has no key '" + keys[i] + "'");
    at += (i ? "." : "") + keys[i];
    YAML::Node next = node[keys[i]];
    if (!next.IsDefined() || next.IsNull()) {
      node[keys[i]] = YAML::Node(YAML::NodeType::Map);
      next = node[keys[i]];
      src.overridden[at] = o.origin;  // a mapping the override created: its errors are the override's
    }
    node.reset(next);
  }
  if (!node.IsMap() && !node.IsNull())
    throw InputError(o.origin, "cannot set '" + o.path + "': its parent is not a mapping");
  node[keys.back()] = value_node;
  // the new value replaces whatever earlier overrides set beneath it
  for (auto it = src.overridden.lower_bound(o.path); it != src.overridden.end();) {
    if (it->first == o.path || it->first.rfind(o.path + ".", 0) == 0)
      it = src.overridden.erase(it);
    else if (it->first.compare(0, o.path.size(), o.path) != 0)
      break;
    else
      ++it;
  }
  src.overridden[o.path] = o.origin;
}

}  // namespace fleetsim::detail
