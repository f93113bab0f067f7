// A file the CLI writes (a report, a profile, a check's JUnit and Markdown) appears whole or not
// at all: written to a new file beside the one its path names and renamed over it, so that a full
// disk or a killed run leaves the old file, never a cut-off one. The file keeps what it was: a
// symbolic link stays a link (the file it names is replaced), and the mode and owner stay. What a
// rename cannot replace faithfully is written in place, as before: a device or pipe (/dev/stdout,
// /dev/full), a path through /proc or /dev, a file with other hard links, a file the user may not
// write, one whose owner or mode could not be kept, one mounted on its own, or one in a folder
// that takes no new file.
#pragma once
#include <string>

namespace fleetsim::cli {

// Throws OutputError (exit 3) "PATH: error: writing WHAT failed: REASON".
void write_file_whole(const std::string& path, const std::string& text, const std::string& what);

}  // namespace fleetsim::cli
