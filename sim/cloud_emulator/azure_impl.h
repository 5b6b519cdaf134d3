// Helpers shared by the AzureEmulator's translation units (not a public API).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "sim/cloud_emulator/azure_emulator.h"

namespace gpuscaler::sim::azure {

// A JSON answer with `status` (200 by default).
EmulatorResponse Json(const std::string& body, int status = 200);

// ARM's error body, {"error":{"code":code,"message":message}}.
EmulatorResponse ArmError(int status, const std::string& code, const std::string& message);

// 404 ResourceNotFound for `type` ("Microsoft.Compute/virtualMachineScaleSets")
// `name` in resource group `rg`, worded as ARM words it.
EmulatorResponse ResourceNotFound(const std::string& type, const std::string& name, const std::string& rg);

// ISO 8601 UTC with fractional seconds ("2026-12-07T16:00:00.0000000Z").
std::string IsoTime(WallTime t);
// RFC 1123 ("Mon, 07 Dec 2026 16:00:00 GMT"), as IMDS prints NotBefore.
std::string Rfc1123Time(WallTime t);

// ASCII lower case.
std::string Lower(std::string_view s);
bool EqualsNoCase(std::string_view a, std::string_view b);

// A header of the request (case-insensitive name), or "".
std::string Header(const EmulatorRequest& request, std::string_view name);

// A JSON map of strings ({} when absent); throws json::exception on
// another type (answered 400 by Handle).
std::map<std::string, std::string> StringMap(const nlohmann::json& j, const char* key);

}  // namespace gpuscaler::sim::azure
