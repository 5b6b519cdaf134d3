// Running the built gpuscaler binary from a test, as an operator would:
// arguments quoted for the shell, stdout and stderr captured to files in a
// per-test folder, the exit code decoded.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>
#include <spawn.h>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpuscaler::testing {

struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The path of executable `name` in a directory of $PATH; "" when none has it.
inline std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return "";
  std::stringstream ss(path);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) continue;
    const std::filesystem::path p = std::filesystem::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

inline std::string ReadAll(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string ShellQuote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out.append("'\\''");
    } else {
      out.push_back(c);
    }
  }
  out.push_back('\'');
  return out;
}

// A fixture with a fresh folder per test and a way to run the binary in it.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("gpuscaler_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path Write(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p) << text;
    return p;
  }

  ProcessResult Gpuscaler(const std::vector<std::string>& args) {
    std::string command = ShellQuote(GPUSCALER_BINARY);
    for (const std::string& a : args) {
      command.push_back(' ');
      command.append(ShellQuote(a));
    }
    const std::filesystem::path out = dir_ / "stdout", err = dir_ / "stderr";
    command.append(" >").append(ShellQuote(out.string()));
    command.append(" 2>").append(ShellQuote(err.string()));
    const int status = std::system(command.c_str());
    ProcessResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = ReadAll(out);
    r.err = ReadAll(err);
    return r;
  }

  std::filesystem::path dir_;
};

// A long-running child process (the daemon): started with posix_spawn, its
// output to files, signalled and reaped by the test. The destructor kills
// it if the test did not stop it.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::filesystem::path& out,
               const std::filesystem::path& err) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    if (posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~ChildProcess() {
    if (pid_ > 0 && !exit_code_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  void Signal(int signo) const {
    if (pid_ > 0) ::kill(pid_, signo);
  }
  // The exit code (128 + signal when killed), or nullopt while it still runs
  // after `timeout`.
  std::optional<int> Wait(std::chrono::milliseconds timeout) {
    if (exit_code_) return exit_code_;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return exit_code_;
      }
      if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a child: nothing to await
    }
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> exit_code_;
};

// Polls `path` until it holds a port number (a daemon's --port-file), or 0
// after `timeout`.
inline uint16_t WaitForPortFile(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string text = ReadAll(path);
    if (!text.empty() && text.back() == '\n') return static_cast<uint16_t>(std::stoi(text));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 0;
}

}  // namespace gpuscaler::testing
