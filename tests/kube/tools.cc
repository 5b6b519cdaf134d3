#include "kube/tools.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpuscaler::kube_test {

std::filesystem::path SourceDir() { return GPUSCALER_SOURCE_DIR; }
std::filesystem::path SharedDir() { return GPUSCALER_SHARED_DIR; }

std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  path_ = std::filesystem::path(::testing::TempDir()) /
          ("gpuscaler_kube_" + std::to_string(::getpid()) + "_" + (info ? info->name() : "suite") + "_" +
           std::to_string(counter++));
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

std::optional<std::filesystem::path> FindInPath(const std::string& tool) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::filesystem::path candidate = std::filesystem::path(dir) / tool;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

CommandResult RunCommand(const std::vector<std::string>& argv) {
  CommandResult r;
  TempDir dir;
  const std::filesystem::path out = dir.path() / "stdout", err = dir.path() / "stderr";
  const pid_t pid = ::fork();
  if (pid < 0) return r;
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int in = ::open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || in < 0) ::_exit(127);
    ::dup2(in, 0);
    ::dup2(o, 1);
    ::dup2(e, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadFile(out);
  r.err = ReadFile(err);
  return r;
}

std::vector<YAML::Node> Kustomize(const std::filesystem::path& kubectl, const std::filesystem::path& dir) {
  const CommandResult r = RunCommand({kubectl.string(), "kustomize", dir.string()});
  EXPECT_EQ(r.exit_code, 0) << "kubectl kustomize " << dir << ":\n" << r.err;
  if (r.exit_code != 0) return {};
  std::vector<YAML::Node> objects;
  for (const YAML::Node& doc : YAML::LoadAll(r.out)) {
    if (doc.IsMap()) objects.push_back(doc);
  }
  return objects;
}

YAML::Node FindObject(const std::vector<YAML::Node>& objects, const std::string& kind, const std::string& name,
                      bool hashed) {
  for (const YAML::Node& o : objects) {
    if (o["kind"].as<std::string>("") != kind) continue;
    const std::string n = o["metadata"]["name"].as<std::string>("");
    if (n == name || (hashed && n.rfind(name + "-", 0) == 0)) return o;
  }
  return YAML::Node(YAML::NodeType::Undefined);  // a plain Node() is a defined null, true in a test
}

namespace {

std::string DecodeChunked(const std::string& body) {
  std::string out;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t eol = body.find("\r\n", pos);
    if (eol == std::string::npos) break;
    const size_t size = std::strtoul(body.substr(pos, eol - pos).c_str(), nullptr, 16);
    if (size == 0) break;
    out.append(body, eol + 2, size);
    pos = eol + 2 + size + 2;
  }
  return out;
}

}  // namespace

HttpResponse HttpGet(int port, const std::string& path) {
  HttpResponse response;
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return response;
  timeval timeout{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return response;
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return response;
  }
  std::string raw;
  char buf[8192];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) raw.append(buf, static_cast<size_t>(n));
  ::close(fd);
  const size_t head_end = raw.find("\r\n\r\n");
  if (raw.rfind("HTTP/", 0) != 0 || head_end == std::string::npos) return response;
  const size_t space = raw.find(' ');
  response.status = std::atoi(raw.c_str() + space + 1);
  std::string head = raw.substr(0, head_end);
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  response.body = raw.substr(head_end + 4);
  if (head.find("transfer-encoding: chunked") != std::string::npos) response.body = DecodeChunked(response.body);
  return response;
}

namespace {

bool IsIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool IsIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }

// Skips a bracketed span starting at text[i] == open; returns the index
// after the matching close, honouring quoted strings inside.
size_t SkipBracketed(const std::string& text, size_t i, char open, char close) {
  int depth = 0;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"' || c == '\'' || c == '`') {
      const char q = c;
      for (++i; i < text.size() && text[i] != q; ++i) {
        if (text[i] == '\\') ++i;
      }
    } else if (c == open) {
      ++depth;
    } else if (c == close && --depth == 0) {
      return i + 1;
    }
  }
  return i;
}

}  // namespace

std::set<std::string> MetricNamesInPromQl(const std::string& expr) {
  static const std::set<std::string> kKeywords = {"and", "or",  "unless", "bool", "offset", "inf",
                                                  "nan", "Inf", "NaN",    "atan2"};
  // Aggregation operators may be followed by `by (…)` instead of `(`.
  static const std::set<std::string> kAggregations = {"sum",    "min",    "max",    "avg",          "group",
                                                      "stddev", "stdvar", "count",  "count_values", "bottomk",
                                                      "topk",   "quantile", "limitk", "limit_ratio"};
  static const std::set<std::string> kLabelLists = {"by", "without", "on", "ignoring", "group_left", "group_right"};
  std::set<std::string> names;
  size_t i = 0;
  while (i < expr.size()) {
    const char c = expr[i];
    if (c == '"' || c == '\'' || c == '`') {
      const char q = c;
      for (++i; i < expr.size() && expr[i] != q; ++i) {
        if (expr[i] == '\\') ++i;
      }
      ++i;
    } else if (c == '{') {
      i = SkipBracketed(expr, i, '{', '}');  // label matchers
    } else if (c == '[') {
      i = SkipBracketed(expr, i, '[', ']');  // range or subquery
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < expr.size() && std::isdigit(static_cast<unsigned char>(expr[i + 1])))) {
      while (i < expr.size() && (std::isalnum(static_cast<unsigned char>(expr[i])) || expr[i] == '.')) ++i;
    } else if (c == '$') {
      for (++i; i < expr.size() && (IsIdentChar(expr[i]) || expr[i] == '{' || expr[i] == '}'); ++i) {
      }  // Grafana variable
    } else if (IsIdentStart(c)) {
      const size_t start = i;
      while (i < expr.size() && IsIdentChar(expr[i])) ++i;
      const std::string ident = expr.substr(start, i - start);
      size_t next = i;
      while (next < expr.size() && std::isspace(static_cast<unsigned char>(expr[next]))) ++next;
      const bool call = next < expr.size() && expr[next] == '(';
      if (kLabelLists.count(ident)) {
        if (call) i = SkipBracketed(expr, next, '(', ')');
      } else if (!call && !kKeywords.count(ident) && !kAggregations.count(ident)) {
        names.insert(ident);
      }
    } else {
      ++i;
    }
  }
  return names;
}

std::set<std::string> MetricNamesInExposition(const std::string& text) {
  std::set<std::string> names;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream f(line.substr(7));
      std::string name;
      f >> name;
      if (!name.empty()) names.insert(name);
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    size_t end = 0;
    while (end < line.size() && IsIdentChar(line[end])) ++end;
    if (end > 0) names.insert(line.substr(0, end));
  }
  return names;
}

}  // namespace gpuscaler::kube_test
