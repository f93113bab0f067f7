// A run document as CSV (`fleetsim run --format csv`): one header row of dotted paths and one row
// of values, lists joined with ';', null as empty.
#include <string>
#include <utility>
#include <vector>

#include "input/csv.hpp"
#include "report/report.hpp"

namespace fleetsim {

namespace {
void flatten(const Json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else if (j.is_array()) {
    std::string s;
    for (const auto& x : j) s += (s.empty() ? "" : ";") + (x.is_string() ? x.get<std::string>() : x.dump());
    out.emplace_back(prefix, s);
  } else if (j.is_string()) {
    out.emplace_back(prefix, j.get<std::string>());
  } else if (j.is_null()) {
    out.emplace_back(prefix, "");
  } else {
    out.emplace_back(prefix, j.dump());
  }
}
}  // namespace

std::string json_to_csv(const Json& doc) {
  std::vector<std::pair<std::string, std::string>> kv;
  flatten(doc, "", kv);
  std::string head, row;
  for (size_t i = 0; i < kv.size(); ++i) {
    head += (i ? "," : "") + csv_quote(kv[i].first);
    row += (i ? "," : "") + csv_quote(kv[i].second);
  }
  return head + "\n" + row + "\n";
}

}  // namespace fleetsim
