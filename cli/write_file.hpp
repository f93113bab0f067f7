// A file the CLI writes (a report, a profile, a JUnit file) appears whole or not at all: written
// beside its path and renamed over it, so that a full disk or a killed run leaves the old file,
// never a cut-off one. A path that is not a regular file (/dev/stdout, a pipe) is written in place.
#pragma once
#include <string>

namespace fleetsim::cli {

// Throws OutputError (exit 3) "PATH: error: writing WHAT failed: REASON".
void write_file_whole(const std::string& path, const std::string& text, const std::string& what);

}  // namespace fleetsim::cli
