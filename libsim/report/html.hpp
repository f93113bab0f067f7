// `fleetsim report`: one self-contained HTML page (inline CSS and SVG, no scripts, nothing
// fetched) for people reading a run or a sweep: a summary in words, charts and tables.
#pragma once
#include <string>

#include "report/report.hpp"

namespace fleetsim {

// From a `fleetsim run` report (doc["kind"] == "run") or a `fleetsim sweep`/`merge` result
// (doc["kind"] == "sweep"). Blocks that are absent or malformed are left out (or drawn from what
// is there); another kind is an InputError.
std::string html_report(const Json& doc);

// &, <, >, " and ' as character references: safe in HTML text, attributes and inline SVG.
std::string html_escape(const std::string& s);

}  // namespace fleetsim
