// Running the built gpuscaler binary from a test, as an operator would:
// arguments quoted for the shell, stdout and stderr captured to files in a
// per-test folder, the exit code decoded.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
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

}  // namespace gpuscaler::testing
