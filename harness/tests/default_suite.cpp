// The suite the kernel tests run by default: compiled into each test program, so that
// kernel_tests.cpp does not depend on where the build's sources are (the handout links one cached
// copy of it: harness/cmake/runtime_cache.cmake).
namespace scangrade::testing {

extern const char* const kDefaultSuite;
const char* const kDefaultSuite = SCANGRADE_DEFAULT_SUITE;

}  // namespace scangrade::testing
