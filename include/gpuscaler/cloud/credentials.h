// AWS credentials: the key pair (plus session token for temporary
// credentials) that SigV4 signs with, and where they come from, in the order
// the AWS SDKs look:
//   1. environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN;
//   2. shared files: AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials) and
//      AWS_CONFIG_FILE (~/.aws/config), profile AWS_PROFILE (else "default");
//   3. web identity (EKS IRSA): AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE ->
//      STS AssumeRoleWithWebIdentity, refreshed before expiry;
//   4. IMDSv2 instance role: PUT a token, then the role's credentials.
//
// The environment is passed in as a map (never getenv below main()).
// Secrets never leave this module as text: Credentials has no stream
// operator, errors name the source (file, variable, endpoint) and never a
// value, and Redacted() is the only printable form. Providers are not
// thread-safe (the AwsProvider calls them from one thread).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpuscaler/cloud/transport.h"
#include "gpuscaler/model/time.h"
#include "gpuscaler/status.h"

namespace gpuscaler::cloud {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;          // empty for long-term keys
  std::optional<WallTime> expiration;  // unset: does not expire

  bool empty() const { return access_key_id.empty() || secret_access_key.empty(); }
  // "…MPLE session=yes expires=…": safe for logs.
  std::string Redacted() const;
};

using Environment = std::map<std::string, std::string>;
// Reads a whole file (ReadTextFile in production, a map in tests).
using FileReader = std::function<Result<std::string>(const std::string& path)>;

// ---- Pure readers -----------------------------------------------------------

// kNotFound when AWS_ACCESS_KEY_ID is unset; kConfig when only one of the pair is.
Result<Credentials> CredentialsFromEnvironment(const Environment& env);

// An INI file as the AWS CLI writes it: `[section]`, `key = value`, `#`/`;`
// comments. Section names are kept verbatim ("default", "profile dev").
using IniFile = std::map<std::string, std::map<std::string, std::string>>;
IniFile ParseIni(std::string_view text);

// The profile's keys from the credentials file ([name]) and the config file
// ([profile name], or [default]); the credentials file wins. kNotFound when
// the profile has no aws_access_key_id in either.
Result<Credentials> CredentialsFromProfile(const IniFile& credentials_file, const IniFile& config_file,
                                           const std::string& profile);

// The paths and profile the environment selects (HOME for the defaults).
struct SharedFileLocations {
  std::string credentials_file;
  std::string config_file;
  std::string profile;
};
SharedFileLocations SharedFilesFor(const Environment& env);

// AWS_REGION, else AWS_DEFAULT_REGION, else the profile's `region` in the
// config file, else nullopt.
std::optional<std::string> RegionFor(const Environment& env, const FileReader& read_file);

// ---- Providers --------------------------------------------------------------

class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;
  // Credentials valid at `now` (refreshing them when they expire within
  // five minutes). kAuth / kTransient / kNotFound (source absent).
  virtual Result<Credentials> Get(WallTime now) = 0;
  // "environment", "profile dev", "web identity", "imds".
  virtual std::string Name() const = 0;
};

class StaticCredentialsProvider final : public CredentialsProvider {
 public:
  StaticCredentialsProvider(Credentials c, std::string name) : c_(std::move(c)), name_(std::move(name)) {}
  Result<Credentials> Get(WallTime) override { return c_; }
  std::string Name() const override { return name_; }

 private:
  Credentials c_;
  std::string name_;
};

// STS AssumeRoleWithWebIdentity (an unsigned Query call). The token file is
// re-read on each refresh (kubelet rotates it).
class WebIdentityCredentialsProvider final : public CredentialsProvider {
 public:
  struct Options {
    std::string role_arn;
    std::string token_file;
    std::string session_name = "gpuscaler";
    std::string sts_endpoint = "https://sts.amazonaws.com";  // or regional
    Seconds duration{3600};
  };
  WebIdentityCredentialsProvider(Options options, Transport& transport, FileReader read_file)
      : options_(std::move(options)), transport_(transport), read_file_(std::move(read_file)) {}
  Result<Credentials> Get(WallTime now) override;
  std::string Name() const override { return "web identity"; }
  int refreshes() const { return refreshes_; }

 private:
  Options options_;
  Transport& transport_;
  FileReader read_file_;
  std::optional<Credentials> cached_;
  int refreshes_ = 0;
};

// IMDSv2: PUT /latest/api/token, GET /latest/meta-data/iam/security-credentials/
// (the role name), then that role's credentials JSON.
class ImdsCredentialsProvider final : public CredentialsProvider {
 public:
  explicit ImdsCredentialsProvider(Transport& transport, std::string endpoint = "http://169.254.169.254")
      : transport_(transport), endpoint_(std::move(endpoint)) {}
  Result<Credentials> Get(WallTime now) override;
  std::string Name() const override { return "imds"; }

 private:
  Transport& transport_;
  std::string endpoint_;
  std::optional<Credentials> cached_;
};

// Tries each provider in order; the first that has credentials (not
// kNotFound) is used from then on.
class ChainCredentialsProvider final : public CredentialsProvider {
 public:
  explicit ChainCredentialsProvider(std::vector<std::unique_ptr<CredentialsProvider>> chain)
      : chain_(std::move(chain)) {}
  Result<Credentials> Get(WallTime now) override;
  std::string Name() const override;

 private:
  std::vector<std::unique_ptr<CredentialsProvider>> chain_;
  CredentialsProvider* chosen_ = nullptr;
};

// The SDK's default chain for `env`: environment, shared files, web identity
// (when AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE are set), IMDS (unless
// AWS_EC2_METADATA_DISABLED=true). `transport` must outlive the provider.
std::unique_ptr<CredentialsProvider> DefaultCredentialsChain(const Environment& env, Transport& transport,
                                                             FileReader read_file);

// AssumeRoleWithWebIdentity's answer.
Result<Credentials> ParseAssumeRoleWithWebIdentity(std::string_view xml);
// IMDS's role credentials JSON ({"Code":"Success","AccessKeyId",…,"Token","Expiration"}).
Result<Credentials> ParseImdsCredentials(std::string_view json);

}  // namespace gpuscaler::cloud
