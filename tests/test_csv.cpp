// CSV as traces and tables read it: quoted fields with commas, quotes and line breaks, unquoted
// rows split the same way, and trace numbers read as strtod reads them.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "libsim/base/error.hpp"
#include "libsim/input/csv.hpp"
#include "libsim/input/trace.hpp"

using namespace fleetsim;

namespace {

std::string error_of(const std::string& path, const TraceOptions& opt = {}) {
  try {
    load_trace(path, opt);
  } catch (const InputError& e) {
    return e.one_line();
  }
  return "(no error)";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

const std::string kBurstHeader = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n";

}  // namespace

TEST_CASE("quoted CSV fields may hold commas and quotes") {
  const std::string path =
      test::write_temp("quoted.csv",
                       "\"Timestamp\",\"Model\",\"Request tokens\",\"Response tokens\",\"Total tokens\",\"Log Type\"\n"
                       "1,\"GPT-4, 32k\",100,10,110,\"API log\"\n"
                       "2, \"say \"\"hi\"\"\" ,200,20,220,API log\n"
                       "3,ChatGPT,300,30,330,API log\n");
  const TraceData t = load_trace(path);
  CHECK(t.prompt == std::vector<int32_t>{100, 200, 300});
  CHECK(t.output == std::vector<int32_t>{10, 20, 30});
  TraceOptions o;
  o.model_filter = "GPT-4, 32k";
  CHECK(load_trace(path, o).prompt == std::vector<int32_t>{100});
  o.model_filter = "say \"hi\"";
  CHECK(load_trace(path, o).prompt == std::vector<int32_t>{200});
  o.model_filter = "GPT-4";
  CHECK(contains(error_of(path, o), "models present: 'ChatGPT' (1 row), 'GPT-4, 32k' (1 row), 'say \"hi\"' (1 row)"));

  CHECK(load_csv_column(test::write_temp("quoted_col.csv", "name,value\n\"a,b\",3\n\"c \"\"d\"\"\",4\n"), "value") ==
        std::vector<double>{3, 4});

  const std::string open = test::write_temp("unterminated.csv", kBurstHeader + "1,\"GPT-4,100,10,110,API log\n");
  CHECK(error_of(open) == open + ":2:3: error: unterminated quoted field (no closing \")");
}

TEST_CASE("unquoted CSV rows split as quoted ones do, and trace numbers read as strtod reads them") {
  // the unquoted path reuses the field strings: a longer row, then a shorter one
  std::vector<std::string> f;
  CHECK(split_csv_line(" a ,b\t,, c,", f) == 0);
  CHECK(f == std::vector<std::string>{"a", "b", "", "c", ""});
  CHECK(split_csv_line("x", f) == 0);
  CHECK(f == std::vector<std::string>{"x"});
  std::vector<std::string> q;
  CHECK(split_csv_line(" a ,\"b\"\t,, c,", q) == 0);
  CHECK(q == std::vector<std::string>{"a", "b", "", "c", ""});
  // a leading '+' and exponents are numbers; hex, inf and nan are not
  const TraceData t = load_trace(
      test::write_temp("numbers.csv", "timestamp_s,prompt_tokens,output_tokens\n+0.5,1e2,+7\n1.25E0,20.,5\n"));
  CHECK(t.t_s == std::vector<double>{0.5, 1.25});
  CHECK(t.prompt == std::vector<int32_t>{100, 20});
  CHECK(t.output == std::vector<int32_t>{7, 5});
  for (const char* bad : {"0x10", "inf", "nan", "+-1", "1e999", "1.5.2"}) {
    CAPTURE(bad);
    const std::string path =
        test::write_temp("bad_number.csv", std::string("timestamp_s,prompt_tokens,output_tokens\n") + bad + ",1,1\n");
    CHECK(contains(error_of(path), ":2:1: error: bad timestamp '" + std::string(bad) + "' (expected seconds)"));
  }
}

TEST_CASE("a quoted field may hold a line break: one record over two lines, errors on the line they are on") {
  // BurstGPT's Log Type, or any free-text column, written by a CSV writer that quotes a newline
  const std::string path = test::write_temp("multiline.csv", kBurstHeader +
                                                                 "1,\"GPT-4\",100,10,110,\"API\nlog\"\n"
                                                                 "2,ChatGPT,200,20,220,Conversation log\n");
  const TraceData t = load_trace(path);
  CHECK(t.prompt == std::vector<int32_t>{100, 200});
  CHECK(t.output == std::vector<int32_t>{10, 20});
  CHECK(t.t_s == std::vector<double>{0, 1});
  CHECK(t.rows == 2);
  // the record after the two-line one starts on line 4 of the file
  const std::string bad = test::write_temp("multiline_bad.csv", kBurstHeader +
                                                                    "1,GPT-4,100,10,110,\"API\nlog\"\n"
                                                                    "2,ChatGPT,x,20,220,Conversation log\n");
  CHECK(error_of(bad) == bad + ":4:1: error: bad prompt token count 'x' (expected an integer >= 0)");
  CHECK(load_csv_column(test::write_temp("multiline_col.csv", "note,value\n\"two\nlines\",3\nplain,4\n"), "value") ==
        std::vector<double>{3, 4});
}

TEST_CASE("plain and quoted records mixed across read blocks: every field as written") {
  // 30,000 records over several 64 KiB read blocks: most plain (read as views into the block),
  // some with quoted commas and quotes, some over two lines, wherever they fall against a block's end
  std::string text = "a,b,c\n";
  std::vector<std::vector<std::string>> want;
  for (int i = 0; i < 30000; ++i) {
    const std::string n = std::to_string(i);
    if (i % 997 == 5) {
      text += n + ",\"x, \"\"" + n + "\"\"\",z\n";
      want.push_back({n, "x, \"" + n + "\"", "z"});
    } else if (i % 1409 == 7) {
      text += n + ",\"two\nlines\",  " + n + "\t\n";
      want.push_back({n, "two\nlines", n});
    } else {
      text += n + "," + std::to_string(i * 7) + ",c" + n + "\n";
      want.push_back({n, std::to_string(i * 7), "c" + n});
    }
  }
  text += "last,\"q\",end";  // a quote in a last line without its newline
  want.push_back({"last", "q", "end"});
  std::istringstream in(text);
  CsvReader r(in, "mixed.csv");
  size_t i = 0, wrong = 0;
  int line = 1;
  while (r.next()) {
    REQUIRE(i < want.size());
    wrong += r.fields() != want[i];
    CHECK(r.line() == line + 1);
    line = r.line() + int(std::count(want[i][1].begin(), want[i][1].end(), '\n'));
    ++i;
  }
  CHECK(i == want.size());
  CHECK(wrong == 0);
}

TEST_CASE("a trace row off the one-pass path reads as the general parse reads it, errors included") {
  const std::string path = test::write_temp("offpath.csv",
                                            "timestamp_s,prompt_tokens,output_tokens\n"
                                            "1, 5,3\n"                    // a blank around a field
                                            "2.5,0000000012,4\n"          // a count of ten digits
                                            "3.,7,\t8\n"                  // a point without decimals
                                            "1234567.8901234567,1,1\n");  // 17 digits: the general parse
  const TraceData t = load_trace(path);
  CHECK(t.t_s == std::vector<double>{1, 2.5, 3, 1234567.8901234567});
  CHECK(t.prompt == std::vector<int32_t>{5, 12, 7, 1});
  CHECK(t.output == std::vector<int32_t>{3, 4, 8, 1});
  const std::string big =
      test::write_temp("offpath_big.csv", "timestamp_s,prompt_tokens,output_tokens\n1,100000001,1\n");
  CHECK(contains(error_of(big), ":2:1: error: bad prompt token count '100000001' (expected an integer >= 0)"));
  const std::string extra = test::write_temp("offpath_extra.csv", "timestamp_s,prompt_tokens,output_tokens\n1,2,3,4\n");
  CHECK(contains(error_of(extra), ":2:1: error: 4 fields, but the header has 3"));
}

TEST_CASE("an empirical distribution read from a CSV column meets the rules inline values meet") {
  const std::string good = test::write_temp("lengths_ok.csv", "n\n10\n200\n3000\n");
  const std::string bad = test::write_temp("lengths_bad.csv", "n\n10\n0.4\n1e12\n");
  auto with = [](const std::string& path) {
    return "duration_s: 60\ndevice: h100-sxm-80gb\nmodel: llama-3.1-8b\nfleet: {replicas: 1}\n"
           "workload: {arrival: {process: poisson, rate_per_s: 1}, prompt_tokens: {dist: empirical, csv: " +
           path + ", column: n}, output_tokens: 10}\n";
  };
  CHECK(test::error_of(with(good)) == "(no error)");
  const std::string e = test::error_of(with(bad));
  CHECK(e.find("workload.prompt_tokens.csv") != std::string::npos);
  CHECK(e.find("value 0.4 of column 'n' (its value 2 of 3) is out of range (expected an integer in [1, 10000000])") !=
        std::string::npos);
}
