#include "gpuscaler/cloud/credentials.h"

#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/model/json_fields.h"
#include "gpuscaler/model/text.h"
#include "credential_cache.h"

namespace gpuscaler::cloud {
namespace {

std::string Get(const Environment& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

class EnvironmentProvider final : public CredentialsProvider {
 public:
  explicit EnvironmentProvider(Environment env) : env_(std::move(env)) {}
  Result<Credentials> Get(WallTime) override { return CredentialsFromEnvironment(env_); }
  std::string Name() const override { return "environment"; }

 private:
  Environment env_;
};

class ProfileProvider final : public CredentialsProvider {
 public:
  ProfileProvider(SharedFileLocations where, FileReader read) : where_(std::move(where)), read_(std::move(read)) {}
  Result<Credentials> Get(WallTime) override {
    if (!loaded_) {
      IniFile creds, config;
      if (auto t = read_(where_.credentials_file); t.ok()) creds = ParseIni(*t);
      if (auto t = read_(where_.config_file); t.ok()) config = ParseIni(*t);
      loaded_ = CredentialsFromProfile(creds, config, where_.profile);
    }
    return *loaded_;
  }
  std::string Name() const override { return "profile " + where_.profile; }

 private:
  SharedFileLocations where_;
  FileReader read_;
  std::optional<Result<Credentials>> loaded_;
};

}  // namespace

std::string Credentials::Redacted() const {
  std::string out = access_key_id.size() > 8 ? "…" + access_key_id.substr(access_key_id.size() - 4) : "…";
  out += session_token.empty() ? " session=no" : " session=yes";
  if (expiration) out += " expires=" + FormatRfc3339(*expiration);
  return out;
}

Result<Credentials> CredentialsFromEnvironment(const Environment& env) {
  Credentials c;
  c.access_key_id = Get(env, "AWS_ACCESS_KEY_ID");
  c.secret_access_key = Get(env, "AWS_SECRET_ACCESS_KEY");
  c.session_token = Get(env, "AWS_SESSION_TOKEN");
  if (c.access_key_id.empty() && c.secret_access_key.empty()) {
    return Error::NotFound("environment: AWS_ACCESS_KEY_ID is not set");
  }
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return Error::Config("environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together");
  }
  return c;
}

IniFile ParseIni(std::string_view text) {
  IniFile out;
  std::string section;
  for (std::string_view raw : Split(text, '\n')) {
    const std::string_view line = Trim(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = Trim(line.substr(1, line.size() - 2));
      out[section];
      continue;
    }
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos || section.empty()) continue;
    out[section][std::string(Trim(line.substr(0, eq)))] = Trim(line.substr(eq + 1));
  }
  return out;
}

Result<Credentials> CredentialsFromProfile(const IniFile& credentials_file, const IniFile& config_file,
                                           const std::string& profile) {
  auto from = [](const IniFile& f, const std::string& section) -> const std::map<std::string, std::string>* {
    auto it = f.find(section);
    return it == f.end() ? nullptr : &it->second;
  };
  for (const auto* s : {from(credentials_file, profile),
                        from(config_file, profile == "default" ? std::string("default") : "profile " + profile)}) {
    if (s == nullptr) continue;
    auto id = s->find("aws_access_key_id");
    if (id == s->end()) continue;
    auto secret = s->find("aws_secret_access_key");
    if (secret == s->end() || secret->second.empty() || id->second.empty()) {
      return Error::Config("profile " + profile + ": aws_access_key_id without aws_secret_access_key");
    }
    Credentials c;
    c.access_key_id = id->second;
    c.secret_access_key = secret->second;
    if (auto tok = s->find("aws_session_token"); tok != s->end()) c.session_token = tok->second;
    return c;
  }
  return Error::NotFound("profile " + profile + ": no aws_access_key_id in the shared credentials or config file");
}

SharedFileLocations SharedFilesFor(const Environment& env) {
  const std::string home = Get(env, "HOME");
  SharedFileLocations l;
  l.credentials_file = Get(env, "AWS_SHARED_CREDENTIALS_FILE");
  if (l.credentials_file.empty()) l.credentials_file = home + "/.aws/credentials";
  l.config_file = Get(env, "AWS_CONFIG_FILE");
  if (l.config_file.empty()) l.config_file = home + "/.aws/config";
  l.profile = Get(env, "AWS_PROFILE");
  if (l.profile.empty()) l.profile = "default";
  return l;
}

std::optional<std::string> RegionFor(const Environment& env, const FileReader& read_file) {
  for (const char* key : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
    if (std::string v = Get(env, key); !v.empty()) return v;
  }
  const SharedFileLocations l = SharedFilesFor(env);
  auto text = read_file(l.config_file);
  if (!text.ok()) return std::nullopt;
  const IniFile config = ParseIni(*text);
  auto s = config.find(l.profile == "default" ? std::string("default") : "profile " + l.profile);
  if (s == config.end()) return std::nullopt;
  auto r = s->second.find("region");
  if (r == s->second.end() || r->second.empty()) return std::nullopt;
  return r->second;
}

Result<Credentials> ParseAssumeRoleWithWebIdentity(std::string_view body) {
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size()) ||
      std::string_view(doc.document_element().name()) != "AssumeRoleWithWebIdentityResponse") {
    return Error::Auth("AssumeRoleWithWebIdentity: unexpected answer");
  }
  pugi::xml_node c = doc.document_element().child("AssumeRoleWithWebIdentityResult").child("Credentials");
  Credentials out;
  out.access_key_id = c.child_value("AccessKeyId");
  out.secret_access_key = c.child_value("SecretAccessKey");
  out.session_token = c.child_value("SessionToken");
  WallTime exp;
  if (out.empty() || !ParseAwsTime(c.child_value("Expiration"), &exp)) {
    return Error::Auth("AssumeRoleWithWebIdentity: answer lacks credentials or expiration");
  }
  out.expiration = exp;
  return out;
}

Result<Credentials> ParseImdsCredentials(std::string_view body) {
  auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Error::Auth("imds: role credentials are not a JSON object");
  // A missing Code means success.
  if (j.contains("Code") && StringAt(j, "Code") != "Success") {
    return Error::Auth("imds: role credentials Code is not Success");
  }
  Credentials out;
  out.access_key_id = StringAt(j, "AccessKeyId");
  out.secret_access_key = StringAt(j, "SecretAccessKey");
  out.session_token = StringAt(j, "Token");
  WallTime exp;
  if (out.empty() || !ParseAwsTime(StringAt(j, "Expiration"), &exp)) {
    return Error::Auth("imds: role credentials lack keys or Expiration");
  }
  out.expiration = exp;
  return out;
}

Result<Credentials> WebIdentityCredentialsProvider::Get(WallTime now) {
  if (Fresh(cached_, now)) return *cached_;
  auto token = read_file_(options_.token_file);
  if (!token.ok()) {
    return CachedOr(cached_,
                    Error::Auth("web identity: reading token file " + options_.token_file + ": " +
                                token.error().message()),
                    now);
  }
  QueryParams q = {{"Action", "AssumeRoleWithWebIdentity"},
                   {"Version", "2011-06-15"},
                   {"RoleArn", options_.role_arn},
                   {"RoleSessionName", options_.session_name},
                   {"WebIdentityToken", std::string(Trim(*token))},
                   {"DurationSeconds", std::to_string(options_.duration.count())}};
  TransportRequest req{"POST", options_.sts_endpoint + "/",
                       {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}}, EncodeForm(q)};
  auto resp = transport_.Send(req);
  Result<Credentials> fresh = Error::Internal("unset");
  if (!resp.ok()) {
    fresh = resp.error().WithContext("web identity: " + options_.sts_endpoint);
  } else if (resp->status != 200) {
    fresh = ErrorFromResponse("web identity: AssumeRoleWithWebIdentity", resp->status, resp->body);
  } else {
    fresh = ParseAssumeRoleWithWebIdentity(resp->body);
  }
  return KeepFetched(cached_, std::move(fresh), now, &refreshes_);
}

Result<Credentials> ImdsCredentialsProvider::Get(WallTime now) {
  if (Fresh(cached_, now)) return *cached_;
  auto fail = [&](Error e) { return CachedOr(cached_, std::move(e), now); };
  auto token = transport_.Send({"PUT", endpoint_ + "/latest/api/token", {{"X-aws-ec2-metadata-token-ttl-seconds", "21600"}}, ""});
  if (!token.ok()) return fail(Error::NotFound("imds: " + token.error().message()));
  if (token->status != 200) return fail(Error::NotFound("imds: token request answered HTTP " + std::to_string(token->status)));
  const HeaderList auth = {{"X-aws-ec2-metadata-token", std::string(Trim(token->body))}};
  const std::string base = endpoint_ + "/latest/meta-data/iam/security-credentials/";
  auto role = transport_.Send({"GET", base, auth, ""});
  if (!role.ok()) return fail(role.error().WithContext("imds"));
  if (role->status == 404) return fail(Error::NotFound("imds: the instance has no IAM role"));
  if (role->status != 200) return fail(Error::Transient("imds: role list answered HTTP " + std::to_string(role->status)));
  const std::string name(Trim(std::string_view(role->body).substr(0, role->body.find('\n'))));
  auto creds = transport_.Send({"GET", base + name, auth, ""});
  if (!creds.ok()) return fail(creds.error().WithContext("imds"));
  if (creds->status != 200) {
    return fail(Error::Transient("imds: role credentials answered HTTP " + std::to_string(creds->status)));
  }
  auto parsed = ParseImdsCredentials(creds->body);
  if (!parsed.ok()) return fail(parsed.error());
  cached_ = *parsed;
  return *cached_;
}

Result<Credentials> ChainCredentialsProvider::Get(WallTime now) {
  if (chosen_ != nullptr) return chosen_->Get(now);
  std::string tried;
  for (auto& p : chain_) {
    auto c = p->Get(now);
    if (c.ok()) {
      chosen_ = p.get();
      return c;
    }
    if (c.error().category() != ErrorCategory::kNotFound) return c.error().WithContext("credentials from " + p->Name());
    tried += (tried.empty() ? "" : "; ") + c.error().message();
  }
  return Error::Auth("no AWS credentials found (" + tried + ")");
}

std::string ChainCredentialsProvider::Name() const { return chosen_ ? chosen_->Name() : "chain"; }

std::unique_ptr<CredentialsProvider> DefaultCredentialsChain(const Environment& env, Transport& transport,
                                                             FileReader read_file) {
  std::vector<std::unique_ptr<CredentialsProvider>> chain;
  chain.push_back(std::make_unique<EnvironmentProvider>(env));
  chain.push_back(std::make_unique<ProfileProvider>(SharedFilesFor(env), read_file));
  const std::string role = Get(env, "AWS_ROLE_ARN");
  const std::string token_file = Get(env, "AWS_WEB_IDENTITY_TOKEN_FILE");
  if (!role.empty() && !token_file.empty()) {
    WebIdentityCredentialsProvider::Options o;
    o.role_arn = role;
    o.token_file = token_file;
    if (std::string n = Get(env, "AWS_ROLE_SESSION_NAME"); !n.empty()) o.session_name = n;
    std::string region = Get(env, "AWS_REGION");
    if (region.empty()) region = Get(env, "AWS_DEFAULT_REGION");
    if (!region.empty()) o.sts_endpoint = "https://sts." + region + ".amazonaws.com";
    if (std::string e = Get(env, "AWS_ENDPOINT_URL_STS"); !e.empty()) o.sts_endpoint = e;
    chain.push_back(std::make_unique<WebIdentityCredentialsProvider>(o, transport, read_file));
  }
  if (Get(env, "AWS_EC2_METADATA_DISABLED") != "true") {
    std::string endpoint = Get(env, "AWS_EC2_METADATA_SERVICE_ENDPOINT");
    if (endpoint.empty()) endpoint = "http://169.254.169.254";
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    chain.push_back(std::make_unique<ImdsCredentialsProvider>(transport, endpoint));
  }
  return std::make_unique<ChainCredentialsProvider>(std::move(chain));
}

std::string HeaderValue(const HeaderList& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (EqualsIgnoreCase(k, name)) return v;
  }
  return "";
}

}  // namespace gpuscaler::cloud
