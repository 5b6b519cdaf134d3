#include "support/real_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "gpuscaler/net/url.h"

extern char** environ;

namespace gpuscaler::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* kMarkerVariable = "GPUSCALER_TEST_SERVER";

// Polling interval while a real server starts or stops.
constexpr milliseconds kPoll(50);

bool IsExecutable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && IsExecutable(dir + "/" + name)) return dir + "/" + name;
  }
  return "";
}

std::optional<fs::path> MakeTempDir(const std::string& prefix) {
  std::string pattern = (fs::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (::mkdtemp(pattern.data()) == nullptr) return std::nullopt;
  return fs::path(pattern);
}

void WriteFile(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::trunc) << text; }

struct User {
  uid_t uid;
  gid_t gid;
};

// Starts argv with exactly `env`, output appended to `log_file`, in `cwd`,
// as `user` when given (we are root). Everything the child touches after
// fork is prepared before it: the parent may have threads.
pid_t Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& log_file,
            const std::string& cwd, std::optional<User> user) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  for (const std::string& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const int log_fd = ::open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) return -1;
  if (user && ::fchown(log_fd, user->uid, user->gid) != 0) {
    // Root can always chown; a failure here would show in the log anyway.
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setsid();  // its own session: a terminal's Ctrl-C goes to the test only
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    if (user) {
      if (::setgroups(0, nullptr) != 0 || ::setgid(user->gid) != 0 || ::setuid(user->uid) != 0) ::_exit(126);
    }
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::close(null_fd);
  return pid;
}

// Waits for a child to exit; its status, or nullopt at the deadline.
std::optional<int> WaitChild(pid_t pid, milliseconds within) {
  const auto deadline = steady_clock::now() + within;
  while (true) {
    int status = 0;
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;  // not our child (already reaped)
    if (steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(kPoll);
  }
}

// Pids of live processes whose environment holds `entry` ("NAME=value").
std::vector<pid_t> ProcessesWithEnv(const std::string& entry) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const fs::directory_entry& d : fs::directory_iterator("/proc", ec)) {
    const std::string name = d.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(d.path() / "environ", std::ios::binary);
    if (!in) continue;
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t start = 0;
    while (start < env.size()) {
      size_t end = env.find('\0', start);
      if (end == std::string::npos) end = env.size();
      if (env.compare(start, end - start, entry) == 0) {
        out.push_back(static_cast<pid_t>(std::stol(name)));
        break;
      }
      start = end + 1;
    }
  }
  return out;
}

bool Alive(pid_t pid) {
  // A zombie has no environment left to match; treat it as gone.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

std::vector<std::string> BaseEnvironment(const std::string& marker, const fs::path& home) {
  std::vector<std::string> env = {
      std::string(kMarkerVariable) + "=" + marker,
      "HOME=" + home.string(),
      "LANG=C.UTF-8",
      "LC_ALL=C.UTF-8",
  };
  const char* path = std::getenv("PATH");
  env.push_back(std::string("PATH=") + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"));
  return env;
}

Result<net::HttpResponse> Get(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers,
                              milliseconds timeout) {
  net::HttpRequest req;
  req.url = url;
  req.headers = headers;
  return net::Fetch(req, {.timeout = timeout, .ca_file = {}});
}

}  // namespace

bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && (std::strcmp(ci, "true") == 0 || std::strcmp(ci, "1") == 0);
}

uint16_t FreeTcpPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  uint16_t port = 0;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

std::string PrometheusScrapeConfig(const std::vector<std::string>& targets, std::string_view job,
                                   std::string_view metrics_path, milliseconds interval) {
  std::string out = "global:\n  scrape_interval: " + std::to_string(interval.count()) + "ms\n" +
                    "  evaluation_interval: " + std::to_string(interval.count()) + "ms\n" +
                    "scrape_configs:\n  - job_name: " + std::string(job) + "\n    scrape_interval: " +
                    std::to_string(interval.count()) + "ms\n    scrape_timeout: " +
                    std::to_string(interval.count()) + "ms\n    metrics_path: " + std::string(metrics_path) +
                    "\n    static_configs:\n      - targets: [";
  for (size_t i = 0; i < targets.size(); ++i) out += (i ? ", " : "") + std::string("'") + targets[i] + "'";
  return out + "]\n";
}

// RealServer

RealServer::~RealServer() {
  // Derived destructors call Stop() while GracefulStop() is still theirs.
  std::error_code ec;
  if (owns_dir_) fs::remove_all(dir_, ec);
}

std::string RealServer::marker() const { return dir_.string(); }

std::string RealServer::LogTail(size_t bytes) const {
  std::string all;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir_, ec)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || e.path().extension() != ".log") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
    all += "--- " + name + "\n" + text + "\n";
  }
  return all;
}

bool RealServer::WaitMainExit(milliseconds within) {
  if (pid_ <= 0) return true;
  if (WaitChild(pid_, within)) {
    pid_ = -1;
    return true;
  }
  return false;
}

void RealServer::EndMarkedProcesses(milliseconds grace) {
  const std::string entry = std::string(kMarkerVariable) + "=" + marker();
  for (pid_t p : ProcessesWithEnv(entry)) ::kill(p, SIGTERM);
  const auto deadline = steady_clock::now() + grace;
  while (true) {
    if (pid_ > 0 && WaitChild(pid_, milliseconds(0))) pid_ = -1;
    std::vector<pid_t> left;
    for (pid_t p : ProcessesWithEnv(entry)) {
      if (Alive(p)) left.push_back(p);
    }
    if (left.empty()) return;
    if (steady_clock::now() >= deadline) {
      for (pid_t p : left) ::kill(p, SIGKILL);
      if (pid_ > 0 && WaitChild(pid_, milliseconds(2000))) pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(kPoll);
  }
}

void RealServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  GracefulStop();
  EndMarkedProcesses(milliseconds(5000));
}

// PrometheusServer

PrometheusServer::~PrometheusServer() { Stop(); }

void PrometheusServer::GracefulStop() {
  if (pid_ > 0) ::kill(pid_, SIGTERM);
  WaitMainExit(milliseconds(10000));
}

Result<net::HttpResponse> PrometheusServer::Query(const std::string& promql) const {
  return Get(url() + "/api/v1/query?query=" + net::PercentEncode(promql), {}, milliseconds(5000));
}

// RabbitMqServer

RabbitMqServer::~RabbitMqServer() { Stop(); }

int RabbitMqServer::Ctl(const std::vector<std::string>& args, milliseconds within) const {
  std::vector<std::string> argv = {bin_dir_ + "/rabbitmqctl", "-n", node_};
  argv.insert(argv.end(), args.begin(), args.end());
  std::optional<User> user;
  if (drop_to_rabbitmq_user_) {
    if (const passwd* pw = ::getpwnam("rabbitmq")) user = User{pw->pw_uid, pw->pw_gid};
  }
  const pid_t pid = Spawn(argv, env_, (dir_ / "rabbitmqctl.log").string(), dir_.string(), user);
  if (pid < 0) return -1;
  std::optional<int> status = WaitChild(pid, within);
  if (!status) {
    ::kill(pid, SIGKILL);
    WaitChild(pid, milliseconds(2000));
    return -1;
  }
  return WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
}

void RabbitMqServer::GracefulStop() {
  if (pid_ <= 0) return;
  if (Ctl({"stop"}, milliseconds(30000)) != 0) ::kill(pid_, SIGTERM);
  WaitMainExit(milliseconds(20000));
}

Result<net::HttpResponse> RabbitMqServer::Api(const std::string& method, const std::string& path,
                                              const std::string& body) const {
  net::HttpRequest req;
  req.method = method;
  req.url = url() + path;
  req.headers = {{"Authorization", net::BasicAuthorization(kUser, kPassword)}};
  if (!body.empty()) req.headers.emplace_back("Content-Type", "application/json");
  req.body = body;
  return net::Fetch(req, {.timeout = milliseconds(10000), .ca_file = {}});
}

namespace {
Status Expect2xx(const Result<net::HttpResponse>& r, const std::string& what) {
  if (!r) return r.error().WithContext(what);
  if (r->status / 100 != 2) {
    return Error::Transient(what + ": HTTP " + std::to_string(r->status) + ": " + r->body.substr(0, 300));
  }
  return Status::Ok();
}
}  // namespace

Status RabbitMqServer::AddVhost(const std::string& vhost) const {
  const std::string v = net::PercentEncode(vhost);
  if (Status s = Expect2xx(Api("PUT", "/api/vhosts/" + v, ""), "add vhost " + vhost); !s.ok()) return s;
  return Expect2xx(Api("PUT", "/api/permissions/" + v + "/" + kUser, R"({"configure":".*","write":".*","read":".*"})"),
                   "permissions on vhost " + vhost);
}

Status RabbitMqServer::DeclareQueue(const std::string& vhost, const std::string& queue) const {
  return Expect2xx(Api("PUT", "/api/queues/" + net::PercentEncode(vhost) + "/" + net::PercentEncode(queue),
                       R"({"durable":false,"auto_delete":false,"arguments":{}})"),
                   "declare queue " + queue);
}

Status RabbitMqServer::Publish(const std::string& vhost, const std::string& queue, int count) const {
  std::string routing_key;
  for (char c : queue) {
    if (c == '"' || c == '\\') routing_key += '\\';
    routing_key += c;
  }
  const std::string body = R"({"properties":{},"routing_key":")" + routing_key +
                           R"(","payload":"job","payload_encoding":"string"})";
  for (int i = 0; i < count; ++i) {
    Result<net::HttpResponse> r = Api("POST", "/api/exchanges/" + net::PercentEncode(vhost) + "/amq.default/publish", body);
    if (Status s = Expect2xx(r, "publish to " + queue); !s.ok()) return s;
    if (r->body.find("\"routed\":true") == std::string::npos) {
      return Error::Transient("publish to " + queue + ": not routed: " + r->body);
    }
  }
  return Status::Ok();
}

// Launching

class ServerLauncher {
 public:
  static Result<std::unique_ptr<PrometheusServer>> Prometheus(const std::string& config_yaml,
                                                              std::chrono::seconds ready_within) {
    std::string binary;
    if (const char* override_path = std::getenv("GPUSCALER_PROMETHEUS")) {
      binary = override_path;
    } else {
      binary = FindOnPath("prometheus");
    }
    if (binary.empty() || !IsExecutable(binary)) {
      return Error::NotFound("the prometheus binary is not installed (Debian package `prometheus`; see "
                             "scripts/setup.sh)");
    }
    std::optional<fs::path> dir = MakeTempDir("gpuscaler-prometheus");
    if (!dir) return Error::Internal("cannot create a temp folder for prometheus");
    const uint16_t port = FreeTcpPort();
    std::unique_ptr<PrometheusServer> server(new PrometheusServer(*dir, port));
    WriteFile(*dir / "prometheus.yml", config_yaml);
    fs::create_directories(*dir / "data");
    server->log_file_ = (*dir / "prometheus.log").string();
    const std::vector<std::string> argv = {
        binary,
        "--config.file=" + (*dir / "prometheus.yml").string(),
        "--storage.tsdb.path=" + (*dir / "data").string(),
        "--web.listen-address=127.0.0.1:" + std::to_string(port),
        "--storage.tsdb.retention.time=1h",
    };
    server->pid_ = Spawn(argv, BaseEnvironment(server->marker(), *dir), server->log_file_, dir->string(), std::nullopt);
    if (server->pid_ < 0) return Error::Internal("cannot start " + binary + ": " + std::strerror(errno));
    if (Status s = WaitReady(*server, server->url() + "/-/ready", {}, ready_within); !s.ok()) return s.error();
    return server;
  }

  static Result<std::unique_ptr<RabbitMqServer>> RabbitMq(std::chrono::seconds ready_within) {
    const char* override_dir = std::getenv("GPUSCALER_RABBITMQ_BIN_DIR");
    const std::string bin_dir = override_dir != nullptr ? override_dir : "/usr/lib/rabbitmq/bin";
    if (!IsExecutable(bin_dir + "/rabbitmq-server") || !IsExecutable(bin_dir + "/rabbitmqctl")) {
      return Error::NotFound("rabbitmq-server is not installed in " + bin_dir +
                             " (Debian package `rabbitmq-server`; see scripts/setup.sh)");
    }
    std::optional<fs::path> dir = MakeTempDir("gpuscaler-rabbitmq");
    if (!dir) return Error::Internal("cannot create a temp folder for rabbitmq");
    const uint16_t http_port = FreeTcpPort();
    std::unique_ptr<RabbitMqServer> server(new RabbitMqServer(*dir, http_port));
    server->bin_dir_ = bin_dir;
    server->amqp_port_ = FreeTcpPort();
    const uint16_t dist_port = FreeTcpPort();
    const uint16_t epmd_port = FreeTcpPort();
    server->node_ = "gpuscaler-test-" + std::to_string(http_port) + "@localhost";

    WriteFile(*dir / "rabbitmq.conf",
              "listeners.tcp.default = 127.0.0.1:" + std::to_string(server->amqp_port_) + "\n" +
                  "management.tcp.port = " + std::to_string(http_port) + "\n" +
                  "management.tcp.ip = 127.0.0.1\n"
                  "loopback_users = none\n"
                  "collect_statistics_interval = 500\n"
                  "management.rates_mode = none\n"
                  "log.console = true\n"
                  "log.console.level = warning\n"
                  "log.file.level = info\n");
    WriteFile(*dir / "enabled_plugins", "[rabbitmq_management].\n");
    WriteFile(*dir / "rabbitmq-env.conf", "");
    fs::create_directories(*dir / "mnesia");
    fs::create_directories(*dir / "log");

    // As root, the server runs as `rabbitmq` (what the Debian package
    // expects), so the folder must be that user's.
    std::optional<User> user;
    if (::geteuid() == 0) {
      const passwd* pw = ::getpwnam("rabbitmq");
      if (pw == nullptr) return Error::NotFound("user rabbitmq is missing (reinstall rabbitmq-server)");
      user = User{pw->pw_uid, pw->pw_gid};
      server->drop_to_rabbitmq_user_ = true;
      std::error_code ec;
      for (const fs::directory_entry& e : fs::recursive_directory_iterator(*dir, ec)) {
        if (::chown(e.path().c_str(), pw->pw_uid, pw->pw_gid) != 0) {
          return Error::Internal("cannot chown " + e.path().string() + " to rabbitmq");
        }
      }
      if (::chown(dir->c_str(), pw->pw_uid, pw->pw_gid) != 0) return Error::Internal("cannot chown the temp folder");
    }

    std::vector<std::string> env = BaseEnvironment(server->marker(), *dir);
    const std::string d = dir->string();
    for (const std::string& e : {
             "RABBITMQ_CONFIG_FILE=" + d + "/rabbitmq.conf",
             "RABBITMQ_ADVANCED_CONFIG_FILE=" + d + "/advanced.config",
             "RABBITMQ_CONF_ENV_FILE=" + d + "/rabbitmq-env.conf",
             "RABBITMQ_MNESIA_BASE=" + d + "/mnesia",
             "RABBITMQ_LOG_BASE=" + d + "/log",
             "RABBITMQ_ENABLED_PLUGINS_FILE=" + d + "/enabled_plugins",
             "RABBITMQ_PID_FILE=" + d + "/rabbitmq.pid",
             "RABBITMQ_NODENAME=" + server->node_,
             "RABBITMQ_DIST_PORT=" + std::to_string(dist_port),
             "ERL_EPMD_PORT=" + std::to_string(epmd_port),
         }) {
      env.push_back(e);
    }
    server->env_ = env;
    server->log_file_ = (*dir / "server.log").string();
    server->pid_ = Spawn({bin_dir + "/rabbitmq-server"}, env, server->log_file_, d, user);
    if (server->pid_ < 0) return Error::Internal("cannot start rabbitmq-server: " + std::string(std::strerror(errno)));
    const std::vector<std::pair<std::string, std::string>> auth = {
        {"Authorization", net::BasicAuthorization(RabbitMqServer::kUser, RabbitMqServer::kPassword)}};
    if (Status s = WaitReady(*server, server->url() + "/api/overview", auth, ready_within); !s.ok()) return s.error();
    return server;
  }

 private:
  // Polls `url` until it answers 200, the process exits, or the deadline.
  static Status WaitReady(RealServer& server, const std::string& url,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          std::chrono::seconds within) {
    const auto deadline = steady_clock::now() + within;
    while (true) {
      Result<net::HttpResponse> r = Get(url, headers, milliseconds(1000));
      if (r.ok() && r->status == 200) return Status::Ok();
      if (server.pid_ > 0) {
        if (std::optional<int> status = WaitChild(server.pid_, milliseconds(0))) {
          server.pid_ = -1;
          return Error::Transient("server exited while starting (status " + std::to_string(*status) + "):\n" +
                                  server.LogTail());
        }
      }
      if (steady_clock::now() >= deadline) {
        return Error::Transient("server not ready at " + url + " after " + std::to_string(within.count()) + " s:\n" +
                                server.LogTail());
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
  }
};

Result<std::unique_ptr<PrometheusServer>> StartPrometheus(const std::string& config_yaml,
                                                          std::chrono::seconds ready_within) {
  return ServerLauncher::Prometheus(config_yaml, ready_within);
}

Result<std::unique_ptr<RabbitMqServer>> StartRabbitMq(std::chrono::seconds ready_within) {
  return ServerLauncher::RabbitMq(ready_within);
}

}  // namespace gpuscaler::testing
