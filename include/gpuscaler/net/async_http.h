// The coroutine form of the HTTP client (net/http_client.h), for code that
// already runs on an io_context. Includes Asio: include it only from the few
// .cc files that co_await it, never from a widely included header.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "gpuscaler/net/http_client.h"

namespace gpuscaler::net {

// Sends `request` and reads the answer on the calling coroutine's executor,
// under options.timeout for the whole exchange. Same results and errors as
// Fetch(); never throws (an exception inside becomes kInternal). Takes its
// arguments by value so the caller's copies may go away while it runs.
boost::asio::awaitable<Result<HttpResponse>> AsyncFetch(HttpRequest request, HttpClientOptions options);

}  // namespace gpuscaler::net
