// Headless Chromium (Debian `chromium`) for tests of self-contained HTML
// pages: the DOM after the page's scripts ran, a screenshot, and the console
// lines that report errors. Header-only; no gpuscaler dependency.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace gpuscaler::testing {

// The chromium binary, or "" when it is not installed.
inline std::string FindChromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    for (const char* dir : {"/usr/bin", "/usr/local/bin", "/snap/bin"}) {
      const std::string path = std::string(dir) + "/" + name;
      if (std::filesystem::exists(path)) return path;
    }
  }
  return "";
}

// Whether CI=true: there a missing browser is a failure, not a skip.
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

struct ChromiumRun {
  int exit_code = -1;
  std::string output;  // the DOM (--dump-dom) or nothing
  std::string log;     // stderr: console messages with --enable-logging
};

// Runs headless chromium on `page` (a file) with `mode` ("--dump-dom" or
// "--screenshot=FILE --window-size=W,H"), its profile and files in `dir`.
inline ChromiumRun RunChromiumOnce(const std::string& chromium, const std::filesystem::path& page,
                                   const std::string& mode, const std::filesystem::path& dir) {
  static int run = 0;
  const std::string tag = std::to_string(++run);
  const std::filesystem::path out = dir / ("chromium-" + tag + ".out"), log = dir / ("chromium-" + tag + ".log");
  const std::string command = "timeout 90 " + chromium +
                              " --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
                              " --disable-component-update --disable-sync --enable-logging=stderr --v=0"
                              " --user-data-dir=" +
                              (dir / "chromium-profile").string() + " " + mode + " file://" + page.string() + " > " +
                              out.string() + " 2> " + log.string();
  const int status = std::system(command.c_str());
  ChromiumRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  const auto read = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  };
  r.output = read(out);
  r.log = read(log);
  return r;
}

// RunChromiumOnce, again once when the browser itself did not run to its end
// (a non-zero exit: on a loaded machine headless Chromium occasionally fails
// to start). The page's own errors are in the log of the run that finished,
// so a retry hides nothing the caller checks; the first failure's log is kept
// in front of the second's.
inline ChromiumRun RunChromium(const std::string& chromium, const std::filesystem::path& page,
                               const std::string& mode, const std::filesystem::path& dir) {
  ChromiumRun first = RunChromiumOnce(chromium, page, mode, dir);
  if (first.exit_code == 0) return first;
  ChromiumRun second = RunChromiumOnce(chromium, page, mode, dir);
  second.log = "first attempt exited " + std::to_string(first.exit_code) + ":\n" + first.log + "\nsecond attempt:\n" +
               second.log;
  return second;
}

// Console lines that report a script error, an uncaught exception or a
// blocked load (a Content-Security-Policy violation).
inline std::vector<std::string> ConsoleErrors(const std::string& log) {
  std::vector<std::string> errors;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("CONSOLE") == std::string::npos) continue;
    if (line.find("ERROR") != std::string::npos || line.find("Uncaught") != std::string::npos ||
        line.find("Content Security Policy") != std::string::npos) {
      errors.push_back(line);
    }
  }
  return errors;
}

// The width and height of a PNG file's image (0, 0 when it is not one).
inline std::pair<uint32_t, uint32_t> PngSize(const std::string& image) {
  if (image.size() < 24 || image.substr(1, 3) != "PNG") return {0, 0};
  const auto be32 = [&](size_t at) {
    return (static_cast<uint32_t>(static_cast<unsigned char>(image[at])) << 24) |
           (static_cast<uint32_t>(static_cast<unsigned char>(image[at + 1])) << 16) |
           (static_cast<uint32_t>(static_cast<unsigned char>(image[at + 2])) << 8) |
           static_cast<uint32_t>(static_cast<unsigned char>(image[at + 3]));
  };
  return {be32(16), be32(20)};
}

}  // namespace gpuscaler::testing
