// The real `aws` CLI (botocore) against `gpuscaler cloud-emulator`, started
// by the test on a free loopback port with the scenario the fixture names:
// shared by aws_cli_test.cc and aws_asg_test.cc. Skips the test when `aws`
// is not on PATH, except under CI=true where that fails.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cloud/daemon_harness.h"

namespace gpuscaler::testing {

using nlohmann::json;

class AwsCliTest : public CliTest {
 protected:
  // The emulator's scenario (YAML).
  virtual std::string Scenario() const = 0;

  void SetUp() override {
    CliTest::SetUp();
    aws_ = FindOnPath("aws");
    if (aws_.empty()) {
      const char* ci = std::getenv("CI");
      if (ci != nullptr && std::string(ci) == "true") FAIL() << "the aws CLI is not on PATH (CI=true)";
      GTEST_SKIP() << "the aws CLI is not on PATH";
    }
    emulator_ = std::make_unique<EmulatorProcess>(dir_, Scenario());
    ASSERT_TRUE(emulator_->ok()) << "the emulator did not start: " << emulator_->log();
  }

  void TearDown() override {
    emulator_.reset();
    CliTest::TearDown();
  }

  struct Run {
    int exit_code = -1;
    json out;
    std::string raw;
    std::string err;
  };

  // Runs `aws --endpoint-url … <args>` with dummy credentials; parses stdout.
  Run Aws(const std::vector<std::string>& args, const std::string& secret = kSecretKey) {
    std::string cmd = "env -u AWS_PROFILE -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID=" + std::string(kAccessKey) +
                      " AWS_SECRET_ACCESS_KEY=" + ShellQuote(secret) +
                      " AWS_DEFAULT_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true AWS_PAGER= " +
                      "AWS_CONFIG_FILE=" + ShellQuote((dir_ / "no-config").string()) +
                      " AWS_SHARED_CREDENTIALS_FILE=" + ShellQuote((dir_ / "no-credentials").string()) + " " +
                      ShellQuote(aws_) + " --endpoint-url " + emulator_->url() + " --output json";
    for (const std::string& a : args) {
      cmd += ' ';
      cmd += ShellQuote(a);
    }
    cmd += " >" + ShellQuote((dir_ / "aws.out").string()) + " 2>" + ShellQuote((dir_ / "aws.err").string());
    const int status = std::system(cmd.c_str());
    Run r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.raw = ReadAll(dir_ / "aws.out");
    r.err = ReadAll(dir_ / "aws.err");
    if (!r.raw.empty()) r.out = json::parse(r.raw, nullptr, false);
    return r;
  }

  std::string aws_;
  std::unique_ptr<EmulatorProcess> emulator_;
};

}  // namespace gpuscaler::testing
