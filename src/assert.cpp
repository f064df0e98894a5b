// weft — the one place a failed WEFT_ASSERT reports and aborts.
#include "weft/detail/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace weft::detail {

void assertion_failed(const char* condition, const char* message, const char* file,
                      int line) noexcept {
  std::fprintf(stderr, "weft: invariant violated at %s:%d: %s (%s)\n", file, line, message,
               condition);
  std::fflush(stderr);
  std::abort();
}

}  // namespace weft::detail
