#include "sweep_command.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "cli/progress.hpp"
#include "libsim/base/error.hpp"
#include "libsim/report/report.hpp"
#include "libsim/sweep/sweep.hpp"

namespace fleetsim::cli {

namespace {

using Emit = std::function<void(const std::string&)>;

// SIGINT/SIGTERM during a sweep: the handler only records the signal; the sweep's workers see
// g_stop between simulations. A second signal of the same kind kills at once (SA_RESETHAND).
std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_signal = 0;
static_assert(std::atomic<bool>::is_always_lock_free, "the stop flag must be usable in a signal handler");

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_stop.store(true, std::memory_order_relaxed);
}

void catch_stop_signals() {
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;  // e.g. nohup, a background job
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    sigaction(sig, &sa, nullptr);
  }
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The command line that resumes this sweep from `journal`: the same arguments with --journal
// (and any --resume) replaced by --resume JOURNAL.
std::string resume_command(const std::vector<std::string>& argv, const std::string& journal) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--journal" || a == "--resume") {
      ++i;
      continue;
    }
    if (a.rfind("--journal=", 0) == 0 || a.rfind("--resume=", 0) == 0) continue;
    out += (out.empty() ? "" : " ") + shell_quote(a);
  }
  return out + " --resume " + shell_quote(journal);
}

void emit_sweep(const Json& doc, const std::string& format, const Emit& emit) {
  if (format == "json") {
    emit(doc.dump(2) + "\n");
  } else if (format == "csv") {
    emit(sweep_to_csv(doc));
  } else if (format == "jsonl") {
    emit(sweep_jsonl_header(doc));
    for (const auto& r : doc["rows"]) emit(sweep_jsonl_row(r));
    emit(sweep_jsonl_summary(doc));
  } else {
    emit(format_sweep_table(doc));
  }
}

// CSV and JSON Lines leave row by row as configurations finish (in index order), so a sweep of
// any size holds a few rows per thread; JSON and the table need every row before they start.
struct SweepStream {
  std::optional<SweepCsvWriter> csv;
  bool jsonl = false;
  Emit emit;
  SweepStream(const std::string& format, const Json& header, Emit out) : emit(std::move(out)) {
    if (format == "csv") csv.emplace(header, [this](const std::string& s) { emit(s); });
    if (format == "jsonl") {
      jsonl = true;
      emit(sweep_jsonl_header(header));
    }
  }
  void row(const Json& r) {
    if (csv)
      csv->row(r);
    else
      emit(sweep_jsonl_row(r));
  }
  void finish(const Json& doc) {
    if (csv)
      csv->finish();
    else
      emit(sweep_jsonl_summary(doc));
  }
};

}  // namespace

int run_sweep_command(const ScenarioSource& src, const SweepArgs& o, const Emit& emit) {
  const SweepSpec spec = parse_sweep(src);
  SweepOptions opt;
  opt.backend = o.backend == "cpu" ? Backend::cpu : o.backend == "cuda" ? Backend::cuda : Backend::auto_select;
  opt.threads = o.threads;
  if (!o.shard.empty()) {
    // digits only: sscanf's %u would take "-1" as 4294967295
    const size_t slash = o.shard.find('/');
    auto count = [&](size_t a, size_t b) -> long {
      if (b <= a || b - a > 7) return -1;
      for (size_t i = a; i < b; ++i)
        if (!std::isdigit((unsigned char)o.shard[i])) return -1;
      return std::stol(o.shard.substr(a, b - a));
    };
    const long k = slash == std::string::npos ? -1 : count(0, slash);
    const long n = slash == std::string::npos ? -1 : count(slash + 1, o.shard.size());
    if (k < 0 || n < 1 || n > kMaxShards || k >= n)
      throw InputError(Location{"--shard " + o.shard, 0, 0, ""},
                       fmt::format("expected K/N with 0 <= K < N <= {}, e.g. --shard 0/4", kMaxShards));
    opt.shard_index = k;
    opt.shard_count = n;
  }
  // a backend that is not there, before the journal: a sweep that cannot start leaves no journal
  // behind to refuse its retry
  if (opt.backend == Backend::cuda) resolve_backend(opt.backend, nullptr, 0, opt.threads);
  std::optional<SweepJournal> journal;
  if (!o.resume.empty()) {
    if (!o.journal.empty() && o.journal != o.resume)
      throw InputError(Location{"--journal " + o.journal, 0, 0, ""},
                       "--resume FILE keeps journaling to FILE; drop --journal or give it the same file");
    journal = SweepJournal::resume(o.resume, src, spec, opt.shard_index, opt.shard_count);
    opt.finished = journal->finished();
  } else if (!o.journal.empty()) {
    journal = SweepJournal::create(o.journal, src, spec, opt.shard_index, opt.shard_count);
  }
  if (journal) opt.on_row = [&j = *journal](const Json& row) { j.append(row); };
  std::string note;
  resolve_backend(opt.backend, &note, sweep_simulations(spec, opt), opt.threads);
  // a shard says how many of the sweep's configurations are its own
  const std::string what = opt.shard_count > 1
                               ? fmt::format("{} of {} configurations (shard {}/{})", shard_configurations(spec, opt),
                                             spec.count(), opt.shard_index, opt.shard_count)
                               : fmt::format("{} configurations", spec.count());
  std::fprintf(
      stderr, "fleetsim sweep: %s x %u replications on the %s%s\n", what.c_str(), spec.replications, note.c_str(),
      o.resume.empty()
          ? ""
          : fmt::format("; resuming {} with {} configurations finished", o.resume, opt.finished.size()).c_str());
  cli::Progress progress(isatty(STDERR_FILENO), g_stop);
  opt.progress = [&progress](const SweepProgress& p) { progress.update(p); };
  opt.stop = &g_stop;
  catch_stop_signals();
  std::optional<SweepStream> stream;
  // a reader gone (a closed pipe) or a full disk stops a streamed sweep, whose exit code then says
  // what the write said
  bool output_failed = false;
  const Emit flushed = [&](const std::string& text) {
    emit(text);
    if (!output_failed && o.output_failed && o.output_failed()) {
      output_failed = true;
      progress.stopping_silently();
      g_stop.store(true, std::memory_order_relaxed);
    }
  };
  if (o.format == "csv" || o.format == "jsonl") {
    stream.emplace(o.format, sweep_document_header(src, spec, opt.shard_index, opt.shard_count), flushed);
    opt.ordered_row = [&stream](const Json& r) { stream->row(r); };
  }
  Json doc;
  try {
    doc = run_sweep(src, spec, opt);
  } catch (const SweepInterrupted& e) {
    progress.close();
    if (output_failed && !g_signal) return 0;  // the exit path reports the failed write (quietly for a pipe)
    const int sig = g_signal ? int(g_signal) : SIGINT;
    const std::string what = fmt::format("fleetsim sweep: stopped by {} with {} of {} configurations finished",
                                         sig == SIGTERM ? "SIGTERM" : "SIGINT", e.done, e.total);
    if (journal)
      std::fprintf(stderr, "%s; they are in %s\nresume with: %s\n", what.c_str(), journal->path().c_str(),
                   resume_command(o.argv, journal->path()).c_str());
    else
      std::fprintf(stderr, "%s; without --journal FILE they are lost (run with --journal FILE to be able to resume)\n",
                   what.c_str());
    return 128 + sig;
  } catch (...) {
    progress.close();
    throw;
  }
  progress.close();
  if (stream)
    stream->finish(doc);
  else
    emit_sweep(doc, o.format, emit);
  return 0;
}

int run_merge_command(const std::vector<std::string>& inputs, const std::string& format, const Emit& emit) {
  std::vector<std::pair<std::string, Json>> shards;
  for (const auto& path : inputs) shards.emplace_back(path, read_json_file(path));
  emit_sweep(merge_sweeps(shards), format, emit);
  return 0;
}

}  // namespace fleetsim::cli
