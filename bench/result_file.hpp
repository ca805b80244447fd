#pragma once
// The --benchmark_out policy: where the results go, that no other run writes there at the same
// time, that an output never overwrites an input, and that the file is replaced only by a result
// verified complete on disk. Google Benchmark's own ofstream reports no write error (a full disk
// left a truncated file, exit 0), so the suite writes the file itself.
#include <string>
#include <string_view>
#include <vector>

#include "bench/reporters.hpp"

namespace shardaccum {

struct BenchOptions;

/// What --benchmark_out (or GB's BENCHMARK_OUT variable) asks for.
struct OutputPlan {
  std::string dest;     // the file the results replace (a link resolved); empty: no file output
  bool direct = false;  // a device, pipe or /proc path: written in place, no lock, no temporary
  ReportFormat format = ReportFormat::json;  // --benchmark_out_format (or BENCHMARK_OUT_FORMAT)
  bool tabular = false;                      // --benchmark_counters_tabular, for the console format
};

/// Reads and validates --benchmark_out and --benchmark_out_format from `args` (GB's flags, the last
/// one of a kind wins in GB, so a repeated --benchmark_out is refused), then rewrites `args` so GB
/// opens /dev/null instead: the suite's FiniteReporter renders the file. `reporter`: false on a
/// rank that writes no results (its --benchmark_out is dropped). Throws CliError naming the flag
/// for a repeated flag, an empty name, a missing or read-only directory, a directory as file name,
/// an unknown format, or a path that cannot be examined.
OutputPlan plan_benchmark_out(std::vector<std::string>& args, bool reporter);

/// `path` with the links of its final component followed (a chain of up to 40, stopping at a path
/// under /dev/ or /proc/), as the result file's rename and the trace writer follow them. Never
/// throws: a path that cannot be examined comes back as far as it was followed.
std::string follow_links(const std::string& path);

/// Whether two output paths name one file: each with its links followed (follow_links), made
/// absolute and normalised, so that "t.json", "./t.json", "d/../t.json" and a link to it all
/// match, whether or not the file exists yet. False when either path cannot be examined.
bool same_output_file(const std::string& a, const std::string& b);

/// The files the --model values of `o` are read from (a path, or a shipped name found in
/// --config-dir / the shipped directory), for refuse_overwriting_inputs.
std::vector<std::string> model_input_files(const BenchOptions& o);

/// Throws CliError when `output` (flag `flag`, e.g. "--trace") names one of `inputs` (by file
/// identity: a link or a second hard link counts), before anything is written.
void refuse_overwriting_inputs(const std::string& flag, const std::string& output,
                               const std::vector<std::string>& inputs);

/// Installs the cleanup handler (removes the temporary result and the lock file, then dies of the
/// signal as before) for SIGINT, SIGTERM, SIGHUP and SIGPIPE, each only when it was not ignored at
/// start: `nohup` or `trap '' HUP` keep working. SIGXFSZ is ignored, so a write past `ulimit -f`
/// fails with EFBIG (reported, old result kept) instead of killing the run.
void install_result_cleanup();

/// An exclusive lock on DEST for the whole run (flock on DEST.lock, which holds the owner's pid;
/// removed when released) and the atomic replacement of DEST.
class ResultFile {
 public:
  /// Takes the lock without waiting, then removes DEST.tmp.<pid> files left by killed runs (safe:
  /// a live writer of DEST would hold the lock). Throws CliError "another shardaccum_bench (pid N)
  /// is writing DEST" when it is held, std::runtime_error when the lock file cannot be made.
  /// `flag` names the output in messages ("--benchmark_out=" or "--trace "). At most two live at
  /// once (the results and the trace): the signal handler removes both lock files.
  explicit ResultFile(std::string dest, std::string flag = "--benchmark_out=");
  ~ResultFile();
  ResultFile(const ResultFile&) = delete;
  ResultFile& operator=(const ResultFile&) = delete;

  /// The stale temporary files the constructor removed.
  const std::vector<std::string>& removed_stale() const { return stale_; }

  /// Writes `bytes` to DEST.tmp.<pid> with checked write(2) and fsync, reads it back and compares,
  /// then renames it over DEST. Throws std::runtime_error (errno text: ENOSPC, EFBIG, EIO ...) with
  /// the temporary removed and DEST untouched.
  void commit(std::string_view bytes);

 private:
  std::string dest_, flag_, lock_path_;
  int lock_fd_ = -1;
  int slot_ = 0;  // which of the signal handler's two lock paths is this file's
  std::vector<std::string> stale_;
};

/// Writes `bytes` to a device or pipe (OutputPlan::direct); throws std::runtime_error on a failed
/// or short write.
void write_direct(const std::string& path, std::string_view bytes);

/// Checks that `text` is what a result file of `format` may hold: for JSON, a document nlohmann
/// accepts (no NaN token). Throws std::runtime_error otherwise (a bug in the reporters).
void verify_result_text(ReportFormat format, const std::string& text);

}  // namespace shardaccum
