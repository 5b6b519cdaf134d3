// Forwarding header: percent-encoding lives in net/url.h (URL encoding is not
// a signal concern). Kept for the code outside src/signals that still
// includes this path (tests/support/real_servers.cc); include
// "gpuscaler/net/url.h" and call net::PercentEncode in new code.
#pragma once

#include "gpuscaler/net/url.h"

namespace gpuscaler {

using net::PercentEncode;

}  // namespace gpuscaler
