// Where a scenario comes from: a file, a text or the built-in default, with --set overrides
// (PATH=VALUE); a sweep's source parses its text once, without the sweep section.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "input/input_file.hpp"
#include "input/scenario_internal.hpp"
#include "input/yaml_node.hpp"

namespace fleetsim {

using namespace detail;

extern const char* const kDefaultScenarioYaml;  // generated from scenarios/chat-default.yaml
const char* default_scenario_text() { return kDefaultScenarioYaml; }

Override parse_set(const std::string& text) {
  const size_t eq = text.find('=');
  // an error names the --set it came from; a long value (a generated list) is cut, at a UTF-8
  // character boundary, so that the message stays a line
  constexpr size_t kShown = 160;
  std::string shown = text;
  if (shown.size() > kShown) {
    size_t cut = kShown;
    while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
    shown = shown.substr(0, cut) + "\xe2\x80\xa6 (" + std::to_string(text.size()) + " characters)";
  }
  const Location origin{"--set " + shown, 0, 0, ""};
  if (eq == std::string::npos || eq == 0) throw InputError(origin, "expected PATH=VALUE, e.g. fleet.replicas=4");
  if (invalid_utf8_at(text) != std::string::npos)
    throw InputError(Location{"--set", 0, 0, ""}, "--set: not valid UTF-8");
  return Override{text.substr(0, eq), text.substr(eq + 1), origin, text};
}

bool it_is_flow(const YAML::Node& n) { return n.Style() == YAML::EmitterStyle::Flow; }

// The scenario text with a block-style top-level `sweep:` section replaced by blank lines; the text
// itself when there is none, or when it cannot be cut safely (flow style, malformed YAML).
std::string without_sweep_section(const std::string& text) {
  if (text.find("sweep") == std::string::npos) return text;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception&) {
    return text;  // the parse of the whole text reports it
  }
  if (!root.IsMap()) return text;
  int first = -1;
  for (auto it = root.begin(); it != root.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == "sweep") first = it->first.Mark().line;
  if (first < 0 || it_is_flow(root)) return text;
  std::vector<std::string> lines = split_lines(text);
  if (size_t(first) >= lines.size() || lines[size_t(first)].rfind("sweep", 0) != 0) return text;
  size_t end = size_t(first) + 1;
  while (end < lines.size()) {
    const std::string& l = lines[end];
    if (!l.empty() && l[0] != ' ' && l[0] != '\t' && l[0] != '#') break;  // the next top-level key
    ++end;
  }
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i < size_t(first) || i >= end) out += lines[i];
    if (i + 1 < lines.size()) out += '\n';
  }
  // the cut must leave the rest as it was: an anchor defined in the section and used after it, or
  // a flow value continued at column 0, would not survive it
  try {
    const YAML::Node rest = YAML::Load(out);
    if (!rest.IsMap() || rest.size() + 1 != root.size()) return text;
  } catch (const YAML::Exception&) {
    return text;
  }
  return out;
}

struct ScenarioSource::Impl {
  std::string text, name, base_dir;
  mutable LoadCache cache;
  // The text each configuration parses: the sweep section blanked line by line (line numbers
  // stay), so a sweep of N values does not parse its N values N times.
  mutable std::once_flag once;
  mutable std::string run_text;
  const std::string& text_to_instantiate() const {
    std::call_once(once, [this] { run_text = without_sweep_section(text); });
    return run_text;
  }
};

ScenarioSource ScenarioSource::from_text(const std::string& text, const std::string& name,
                                         const std::string& base_dir) {
  ScenarioSource s;
  s.impl_ = std::make_shared<Impl>();
  s.impl_->text = text;
  s.impl_->name = name;
  s.impl_->base_dir = base_dir.empty() ? "." : base_dir;
  return s;
}

ScenarioSource ScenarioSource::from_file(const std::string& path) {
  return from_text(read_text_file(path, "scenario file", kMaxTextInputBytes), path,
                   std::filesystem::path(path).parent_path().string());
}

ScenarioSource ScenarioSource::builtin_default() {
  return from_text(default_scenario_text(), "<built-in default: scenarios/chat-default.yaml>", ".");
}

ScenarioSource ScenarioSource::with_overrides(std::vector<Override> base) const {
  ScenarioSource s = *this;
  s.base_ = std::move(base);
  return s;
}

Scenario ScenarioSource::instantiate(const std::vector<Override>& overrides) const {
  Source src;
  src.file = impl_->name;
  src.base_dir = impl_->base_dir;
  src.cache = &impl_->cache;
  if (base_.empty()) return load_from(impl_->text_to_instantiate(), std::move(src), overrides);
  std::vector<Override> all = base_;
  all.insert(all.end(), overrides.begin(), overrides.end());
  return load_from(impl_->text_to_instantiate(), std::move(src), all);
}

Scenario ScenarioSource::instantiate_configuration(const std::vector<Override>& overrides) const {
  ScenarioSource own = *this;
  own.base_.clear();
  for (const auto& o : base_)
    if (o.path != "sweep" && o.path.rfind("sweep.", 0) != 0) own.base_.push_back(o);
  return own.instantiate(overrides);
}

const std::string& ScenarioSource::text() const { return impl_->text; }
const std::string& ScenarioSource::name() const { return impl_->name; }
const std::string& ScenarioSource::base_dir() const { return impl_->base_dir; }

std::vector<Override> parse_sets(const std::vector<std::string>& sets) {
  std::vector<Override> out;
  for (const auto& t : sets) out.push_back(parse_set(t));
  return out;
}

Scenario load_scenario_text(const std::string& text, const std::string& name, const std::string& base_dir,
                            const std::vector<std::string>& overrides) {
  return ScenarioSource::from_text(text, name, base_dir).with_overrides(parse_sets(overrides)).instantiate();
}

Scenario load_scenario_file(const std::string& path, const std::vector<std::string>& overrides) {
  return ScenarioSource::from_file(path).with_overrides(parse_sets(overrides)).instantiate();
}

Scenario load_default_scenario(const std::vector<std::string>& overrides) {
  return ScenarioSource::builtin_default().with_overrides(parse_sets(overrides)).instantiate();
}

}  // namespace fleetsim
