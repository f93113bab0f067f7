// Sweeps: the journal of a sweep (--journal, --resume): its header, rows appended as they finish, resuming.
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <utility>

#include "sweep/internal.hpp"

namespace fleetsim {

using sweep_detail::At;
using sweep_detail::check_row;
using sweep_detail::Fail;
using sweep_detail::first_difference;
using sweep_detail::fnv1a;
using sweep_detail::sweep_header;
using sweep_detail::SweepShape;
using sweep_detail::value_at;

namespace {

constexpr int kJournalVersion = 1;

Json journal_header(const ScenarioSource& src, const SweepSpec& spec, uint32_t shard_index, uint32_t shard_count) {
  const Scenario base = src.instantiate();
  const Json doc = sweep_header(src, spec, base, shard_index, shard_count);
  Json overrides = Json::array();
  for (const auto& o : src.base_overrides()) overrides.push_back(o.label);
  Json h;
  h["fleetsim_journal"] = "sweep";
  h["version"] = kJournalVersion;
  h["scenario"] = {{"source", src.name()},
                   {"text_fnv1a64", fmt::format("{:016x}", fnv1a(src.text()))},
                   {"overrides", overrides},
                   {"seed", base.seed}};
  h["sweep"] = {{"parameters", doc["sweep"]["parameters"]},
                {"replications", spec.replications},
                {"sample", doc["sweep"]["sample"]},
                {"configurations", spec.count()},
                {"fingerprint", spec.fingerprint}};
  h["shard"] = doc["shard"];
  return h;
}

// Why a journal's header does not match this run, or "" when it does.
std::string header_mismatch(const Json& got, const Json& want) {
  if (!got.is_object() || got.value("fleetsim_journal", Json()) != "sweep")
    return "not a fleetsim sweep journal (its first line should name the sweep)";
  if (got.value("version", Json()) != kJournalVersion)
    return fmt::format("/version: {}: this fleetsim reads journal version {}", value_at(got, "/version"),
                       kJournalVersion);
  struct Field {
    const char* ptr;
    const char* what;
  };
  static const Field fields[] = {
      {"/scenario/text_fnv1a64", "the scenario's text has changed since the journal was written"},
      {"/scenario/overrides", "the journal was written with other --set overrides"},
      {"/scenario/seed", "the journal was written with another seed"},
      {"/sweep/parameters", "the journal was written for other sweep parameters"},
      {"/sweep/replications", "the journal was written for another number of replications"},
      {"/sweep/sample", "the journal was written for another sample"},
      {"/sweep/configurations", "the journal was written for another number of configurations"},
      {"/sweep/fingerprint", "the journal was written for another sweep section (sample seed, objective or slo)"},
      {"/shard", "the journal was written for another shard"},
  };
  for (const auto& f : fields) {
    const Json::json_pointer p(f.ptr);
    if (!got.contains(p) || got.at(p) != want.at(p)) {
      const std::string d = got.contains(p) ? first_difference(got.at(p), want.at(p), f.ptr) : std::string(f.ptr);
      return fmt::format("{}: {} (journal: {}, this run: {}); resume with the same scenario file and flags", d, f.what,
                         value_at(got, d), value_at(want, d));
    }
  }
  return "";
}

[[noreturn]] void write_failed(const std::string& path, int err) {
  throw OutputError(fmt::format("{}: error: writing the journal failed: {}", path, std::strerror(err)), err);
}

}  // namespace

namespace {

struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0) ::close(fd);
  }
  int release() { return std::exchange(fd, -1); }
};

// Open a journal and lock it (flock, a regular file) for this process alone: a second sweep
// resuming or restarting the same journal is refused instead of interleaving its rows.
// A journal that cannot be created is an output that cannot be written (exit 3); one to resume
// that cannot be opened is an input (exit 2).
int open_journal(const std::string& path, int flags) {
  const bool creating = (flags & O_CREAT) != 0;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    if (creating) throw OutputError(path + ": error: is a directory, not a journal file", EISDIR);
    throw InputError(Location{path, 0, 0, ""}, "is a directory, not a journal file");
  }
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    if (creating)
      throw OutputError(fmt::format("{}: error: cannot create the journal: {}", path, std::strerror(err)), err);
    throw InputError(Location{path, 0, 0, ""}, fmt::format("cannot open the journal: {}", std::strerror(err)));
  }
  struct stat fst {};
  if (::fstat(fd, &fst) == 0 && !S_ISREG(fst.st_mode)) return fd;  // a device or a pipe: nothing to lock
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    throw InputError(Location{path, 0, 0, ""}, err == EWOULDBLOCK
                                                   ? std::string("the journal is in use by another running sweep")
                                                   : fmt::format("cannot lock the journal: {}", std::strerror(err)));
  }
  return fd;
}

std::FILE* append_stream(FdCloser& fd, const std::string& path) {
  std::FILE* f = ::fdopen(fd.fd, "a");
  if (!f) throw InputError(Location{path, 0, 0, ""}, fmt::format("cannot open the journal: {}", std::strerror(errno)));
  fd.release();
  return f;
}

}  // namespace

SweepJournal SweepJournal::create(const std::string& path, const ScenarioSource& src, const SweepSpec& spec,
                                  uint32_t shard_index, uint32_t shard_count) {
  const Json header = journal_header(src, spec, shard_index, shard_count);
  FdCloser fd{open_journal(path, O_RDWR | O_CREAT)};
  struct stat st {};
  if (::fstat(fd.fd, &st) == 0 && st.st_size > 0)
    throw InputError(
        Location{path, 0, 0, ""},
        fmt::format("the journal exists and may hold finished configurations: continue it with --resume {}, "
                    "or remove it to start afresh",
                    path));
  SweepJournal j;
  j.path_ = path;
  j.file_.reset(append_stream(fd, path));
  const std::string line = header.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), j.file_.get()) != line.size() || std::fflush(j.file_.get()) != 0)
    write_failed(path, errno);
  return j;
}

SweepJournal SweepJournal::resume(const std::string& path, const ScenarioSource& src, const SweepSpec& spec,
                                  uint32_t shard_index, uint32_t shard_count) {
  FdCloser fd{open_journal(path, O_RDWR)};
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0 || !S_ISREG(st.st_mode))  // a device would never end (/dev/zero)
    throw InputError(Location{path, 0, 0, ""}, "not a regular file: a journal to resume is the file a sweep wrote");
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.fd, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError(Location{path, 0, 0, ""}, fmt::format("cannot read the journal: {}", std::strerror(errno)));
    }
    text.append(buf, size_t(n));
  }
  const size_t complete =
      text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;  // a cut-short tail is dropped
  if (complete == 0)
    throw InputError(
        Location{path, 0, 0, ""},
        "the journal has no complete first line (it was cut short before the sweep started): remove it and "
        "start again with --journal");
  const Json want = journal_header(src, spec, shard_index, shard_count);

  SweepShape sh;
  for (const auto& p : spec.params) sh.params.emplace_back(p.path, p.json_values);
  sh.grid_size = spec.grid_size;
  sh.configurations = spec.count();
  sh.replications = spec.replications;
  for (const auto& t : spec.slo) sh.slo_metrics.push_back(t.metric);
  sh.sampled = spec.sample != 0;
  sh.shard_index = shard_index;
  sh.shard_count = shard_count;
  sh.expected_parameters = [&spec](uint64_t i) { return spec.parameters_json(i); };

  SweepJournal j;
  j.path_ = path;
  std::map<uint64_t, int> seen;  // configuration -> line
  int line_no = 0;
  for (size_t start = 0; start < complete;) {
    const size_t end = text.find('\n', start);
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    ++line_no;
    const Json v = parse_json_located(line, path, line_no);
    if (line_no == 1) {
      const std::string why = header_mismatch(v, want);
      if (!why.empty()) throw InputError(Location{path, 1, 0, ""}, why);
      continue;
    }
    const Fail fail = [&](const std::string& ptr, const std::string& msg) {
      throw InputError(Location{path, line_no, 0, ""}, (ptr.empty() ? "/" : ptr) + ": " + msg);
    };
    const At row{v, "", &fail};
    const uint64_t i = check_row(row, sh);
    const auto [it, fresh] = seen.emplace(i, line_no);
    if (!fresh) row["index"].fail(fmt::format("configuration {} is already on line {}", i, it->second));
    j.finished_.push_back(v);
  }
  if (complete < text.size() && ::ftruncate(fd.fd, off_t(complete)) != 0) write_failed(path, errno);
  j.file_.reset(append_stream(fd, path));
  return j;
}

void SweepJournal::append(const Json& row) {
  const std::string line = row.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_.get()) != line.size() || std::fflush(file_.get()) != 0)
    write_failed(path_, errno);
}

}  // namespace fleetsim
