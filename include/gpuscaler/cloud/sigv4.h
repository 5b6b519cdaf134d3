// AWS Signature Version 4 (header form) for the Query APIs gpuscaler calls
// (EC2, Auto Scaling, SQS, STS), checked against AWS's published test suite
// and against requests signed by botocore.
//
// Pure functions over values: no clock (the signing time is a parameter), no
// I/O. Thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/cloud/credentials.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

// A request as it will go on the wire.
struct SigningRequest {
  std::string method;  // "POST"
  // The path as on the request line, without the query ("/", "/a b/").
  std::string path = "/";
  // The query string after '?', as on the request line ("" for none). Keys
  // and values may be raw or percent-encoded; they are decoded and re-encoded.
  std::string query;
  // In the order sent; names in any case; a name may repeat. Must hold Host.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
};

struct SigningParams {
  std::string region;   // "us-east-1"
  std::string service;  // "ec2", "autoscaling", "sqs", "sts"
  WallTime time{};      // becomes X-Amz-Date
  // Remove "." and ".." segments and repeated "/" (every service but S3).
  bool normalize_path = true;
  // Sign X-Amz-Security-Token (what SDKs do). False: the token header is
  // added after signing, unsigned (the suite's post-sts-header-after case).
  bool sign_security_token = true;
};

// Lower-case hex of SHA-256(data).
std::string Sha256Hex(std::string_view data);
// Raw 32-byte HMAC-SHA256(key, data).
std::string HmacSha256(std::string_view key, std::string_view data);
// URI-encodes every byte but A-Z a-z 0-9 - _ . ~ as %XX (upper-case hex);
// '/' too unless `keep_slash`. What SigV4 and the Query form bodies use.
std::string UriEncode(std::string_view text, bool keep_slash = false);
// Decodes %XX escapes ('+' stays '+'). Malformed escapes are kept as is.
std::string UriDecode(std::string_view text);

// "20150830T123600Z" and "20150830".
std::string AmzDate(WallTime t);
std::string AmzDay(WallTime t);

// The canonical request of `request` (which must already carry every header
// to be signed, X-Amz-Date included). `signed_headers` receives the
// "host;x-amz-date" list.
std::string CanonicalRequest(const SigningRequest& request, const SigningParams& params,
                             std::string* signed_headers = nullptr);
// The same over only the headers named in `signed_headers` ("a;b;c"), as a
// server rebuilds it from a received Authorization header.
std::string CanonicalRequestFor(const SigningRequest& request, const SigningParams& params,
                                std::string_view signed_headers);
// "AWS4-HMAC-SHA256\n<date>\n<scope>\n<hex sha256 of canonical request>".
std::string StringToSign(std::string_view canonical_request, const SigningParams& params);
// "20150830/us-east-1/service/aws4_request".
std::string CredentialScope(const SigningParams& params);
// The derived key: HMAC chain over "AWS4"+secret, day, region, service, "aws4_request".
std::string SigningKey(std::string_view secret_access_key, const SigningParams& params);
// Hex signature of `string_to_sign`.
std::string Signature(std::string_view secret_access_key, std::string_view string_to_sign,
                      const SigningParams& params);

// Signs in place: adds X-Amz-Date (unless present), X-Amz-Security-Token when
// the credentials carry one (unless present) and Authorization. kAuth when
// the credentials are empty; kInvalidInput when the request has no Host.
Status Sign(SigningRequest& request, const Credentials& credentials, const SigningParams& params);

// The parts of an Authorization header, for a server checking a request.
struct AuthorizationHeader {
  std::string access_key_id;
  std::string day;      // "20150830"
  std::string region;
  std::string service;
  std::string signed_headers;  // "content-type;host;x-amz-date"
  std::string signature;       // hex
};
// kAuth when `value` is not an "AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…,
// Signature=…" header.
Result<AuthorizationHeader> ParseAuthorization(std::string_view value);

}  // namespace gpuscaler::cloud
