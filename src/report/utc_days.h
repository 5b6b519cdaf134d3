// Whole UTC days on Unix seconds, shared by the cost facts (usage sliced at
// midnight) and the views (period starts). Private to src/report.
#pragma once

#include <cstdint>

namespace gpuscaler::report {

inline constexpr int64_t kSecondsPerDay = 86400;

// a / b rounded toward negative infinity (b > 0), so that a time before 1970
// falls in the day that holds it.
inline int64_t FloorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

}  // namespace gpuscaler::report
