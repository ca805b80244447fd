// The rank threads of a cuda world: one per local rank, its device current, its error captured;
// a failing rank releases the others (the host barrier and every bounded wait).
#include "strategies/backend/cuda_world.hpp"

#include <stdexcept>
#include <thread>

#include "common/errors.hpp"

namespace shardaccum::cuda {

void rethrow_root(const std::vector<std::exception_ptr>& errors) {
  rethrow_root_cause(errors);
  throw std::logic_error("rethrow_root called without an error");
}

std::vector<std::exception_ptr> CudaWorld::run_ranks(const std::function<void(int)>& fn) {
  barrier_.reset();
  const int n = static_cast<int>(ranks_.size());
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] {
      try {
        set_device(opts_.first_device + r);
        fn(r);
      } catch (...) {
        errors[r] = std::current_exception();
        barrier_.fail();  // peers waiting at a barrier or polling a wait give up now
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace shardaccum::cuda
