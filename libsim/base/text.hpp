// User text (names, paths, messages that quote input) on its way into an output that a control
// character, a line break or a leading '=' could subvert: a terminal, a Markdown table, a
// spreadsheet. docs/output-schema.md, "Text in outputs", states the rules.
#pragma once
#include <string>

namespace fleetsim {

// `s` with every control character written out: "\n", "\r", "\t", "\e" and "\xHH" for the other
// C0 controls and DEL, "\u{HH}" for the C1 controls (U+0080-U+009F, which terminals also act on).
// Other text, UTF-8 included, is kept.
std::string printable(const std::string& s);

// Whether `s` holds a character printable() would write out (a tab aside, with `tab_ok`).
bool has_control(const std::string& s, bool tab_ok = false);

// printable(s) with '|' escaped: one cell of a Markdown table.
std::string markdown_cell(const std::string& s);

// A CSV cell a spreadsheet would run as a formula: text (not a number) whose first character is
// '=', '+', '-', '@', a tab or a CR. OWASP's rule: such a cell is written with a leading "'".
bool csv_formula_like(const std::string& s);

}  // namespace fleetsim
