// Compile test (tests/priority/CMakeLists.txt): the run-time inversion checks
// default to on in debug builds and off with NDEBUG, unless
// WEFT_PRIORITY_CHECKS is set explicitly.
#include <weft/detail/scheduler_hooks.hpp>

#if defined(WEFT_EXPECT_CHECKS)
static_assert(WEFT_PRIORITY_CHECKS == WEFT_EXPECT_CHECKS, "unexpected WEFT_PRIORITY_CHECKS default");
#else
#error "define WEFT_EXPECT_CHECKS"
#endif

int main() { return 0; }
