// The real `aws` CLI (botocore) against `gpuscaler cloud-emulator`, started
// by the test on a free loopback port with a scenario of its own: the
// fixture shared by aws_cli_test.cc and aws_asg_test.cc.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace gpuscaler::aws_cli {

namespace fs = std::filesystem;
using nlohmann::json;

inline std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

inline std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string Quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class AwsCliTest : public ::testing::Test {
 protected:
  // Starts `gpuscaler cloud-emulator` with `scenario` (skips the test without
  // the aws CLI, fails under CI=true).
  void StartEmulator(const std::string& scenario) {
    aws_ = FindOnPath("aws");
    if (aws_.empty()) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") FAIL() << "the aws CLI is not on PATH (CI=true)";
      GTEST_SKIP() << "the aws CLI is not on PATH";
    }
    dir_ = fs::path(::testing::TempDir()) / ("gpuscaler_aws_cli_" + std::to_string(::getpid()) + "_" +
                                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "scenario.yaml") << scenario;
    const fs::path port_file = dir_ / "port";
    pid_ = ::fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      const std::string out = (dir_ / "emulator.out").string();
      FILE* f = std::freopen(out.c_str(), "w", stdout);
      (void)f;
      f = std::freopen((dir_ / "emulator.err").c_str(), "w", stderr);
      ::execl(GPUSCALER_BINARY, GPUSCALER_BINARY, "cloud-emulator", "--listen", "127.0.0.1:0", "--scenario",
              (dir_ / "scenario.yaml").c_str(), "--port-file", port_file.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    // Wait for the port file (the emulator writes it once it listens).
    for (int i = 0; i < 200 && port_.empty(); ++i) {
      std::string p = Slurp(port_file);
      if (!p.empty() && p.back() == '\n') port_ = p.substr(0, p.size() - 1);
      if (port_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_FALSE(port_.empty()) << "the emulator did not start: " << Slurp(dir_ / "emulator.err");
  }

  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  struct Run {
    int exit_code = -1;
    json out;
    std::string raw;
    std::string err;
  };

  // Runs `aws --endpoint-url … <args>` with dummy credentials; parses stdout.
  Run Aws(const std::vector<std::string>& args, const std::string& secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY") {
    std::string cmd = "env -u AWS_PROFILE -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=" +
                      Quote(secret) + " AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_PAGER= " +
                      "AWS_CONFIG_FILE=" + Quote((dir_ / "no-config").string()) +
                      " AWS_SHARED_CREDENTIALS_FILE=" + Quote((dir_ / "no-credentials").string()) + " " + Quote(aws_) +
                      " --endpoint-url http://127.0.0.1:" + port_ + " --output json";
    for (const std::string& a : args) {
      cmd += ' ';
      cmd += Quote(a);
    }
    cmd += " >";
    cmd += Quote((dir_ / "aws.out").string());
    cmd += " 2>";
    cmd += Quote((dir_ / "aws.err").string());
    const int status = std::system(cmd.c_str());
    Run r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.raw = Slurp(dir_ / "aws.out");
    r.err = Slurp(dir_ / "aws.err");
    if (!r.raw.empty()) r.out = json::parse(r.raw, nullptr, false);
    return r;
  }

  std::string endpoint() const { return "http://127.0.0.1:" + port_; }

  std::string aws_;
  fs::path dir_;
  pid_t pid_ = -1;
  std::string port_;
};

}  // namespace gpuscaler::aws_cli
