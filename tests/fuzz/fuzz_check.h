// FUZZ_CHECK: an invariant of a fuzz target. Unlike assert it stays on in
// Release (the replay tests run in the release build) and says which
// invariant broke before aborting, which libFuzzer reports as a crash and
// ctest as a failed test.
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond, ...)                                              \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "%s:%d: invariant failed: %s: ", __FILE__,      \
                   __LINE__, #cond);                                       \
      std::fprintf(stderr, __VA_ARGS__);                                   \
      std::fputc('\n', stderr);                                            \
      std::abort();                                                        \
    }                                                                      \
  } while (0)
