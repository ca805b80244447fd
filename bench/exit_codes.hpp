#pragma once
// How shardaccum_bench ends: the errors that end a run and the one mapping from them to the exit
// status: 0 done, 1 the run failed, 2 bad input (nothing was measured).
#include <stdexcept>
#include <string>

namespace shardaccum {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // a backend, the rendezvous, an output, every case failed
inline constexpr int kExitUsage = 2;    // bad input, found before any work; or no case ran

/// An error that ends the run, reported as "shardaccum_bench: <who>error: <what>" and, when given,
/// "shardaccum_bench: hint: <hint>" on the next line.
class RunError : public std::runtime_error {
 public:
  /// `who`: "rank N: " under a multi-process launch where the message names this rank, else empty.
  /// `abandon`: a peer process may be gone, so the process ends with std::_Exit, tearing nothing
  /// down that could wait for it.
  explicit RunError(const std::string& what, std::string who = {}, std::string hint = {},
                    bool abandon = false)
      : std::runtime_error(what), who_(std::move(who)), hint_(std::move(hint)), abandon_(abandon) {}
  const std::string& who() const { return who_; }
  const std::string& hint() const { return hint_; }
  bool abandon() const { return abandon_; }

 private:
  std::string who_, hint_;
  bool abandon_;
};

/// Bad input (the command line, the matrix it names) or a run in which no case ran: exit 2.
struct UsageError : RunError {
  using RunError::RunError;
};

/// The run itself failed: exit 1.
struct RunFailure : RunError {
  using RunError::RunError;
};

/// The exit status of a run that ended with `e`: CliError (bench/cli.hpp) and UsageError -> 2,
/// RunFailure and any other exception -> 1.
int exit_code(const std::exception& e);

/// Prints `e` to stderr as described at RunError (a plain exception: "shardaccum_bench: error:
/// <what>") and returns exit_code(e).
int report_error(const std::exception& e);

/// Whether the process must end with std::_Exit after `e` (RunError::abandon).
bool abandons(const std::exception& e);

}  // namespace shardaccum
