// Private to the emulator: the helpers its API files share (XML output,
// form parameters, paging, globs) and the decoded request parameters.
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpuscaler/cloud/aws_query.h"
#include "gpuscaler/cloud/ec2_api.h"
#include "gpuscaler/model/time.h"
#include "sim/cloud_emulator/emulator.h"

namespace gpuscaler::sim {

inline constexpr const char* kEc2Ns = "http://ec2.amazonaws.com/doc/2016-11-15/";
inline constexpr const char* kAsgNs = "http://autoscaling.amazonaws.com/doc/2011-01-01/";
inline constexpr const char* kXmlContentType = "text/xml;charset=UTF-8";

// ---- XML output (xml_out.cc) ----

// Appends <name>value</name>, escaped; <name/> for an empty value.
void Leaf(std::string& out, std::string_view name, std::string_view value);
// Appends <tagSet><item><key>k</key><value>v</value></item>…</tagSet>;
// nothing when `tags` is empty.
void TagSet(std::string& out, const std::map<std::string, std::string>& tags);
// EC2 timestamps carry milliseconds: "2026-12-02T10:00:00.000Z".
std::string Ec2Time(WallTime t);
// EC2's instance state code: pending 0, running 16, shutting-down 32,
// terminated 48, stopping 64, stopped 80.
int StateCode(std::string_view state);
// The start of an EC2 answer: the XML declaration, <{op}Response xmlns=…> and its requestId.
std::string Ec2Open(std::string_view op, const std::string& request_id);
// The start of an Auto Scaling answer: <{op}Response xmlns=…>.
std::string AsgOpen(std::string_view op);
// A paged Auto Scaling answer is AsgPageOpen(op, list), the <member>s, then
// AsgPageClose: the list closed, NextToken `next` unless empty, the request id.
std::string AsgPageOpen(std::string_view op, std::string_view list);
std::string AsgPageClose(std::string_view op, std::string_view list, const std::string& next,
                         const std::string& request_id);

// One instancesSet <item> as DescribeInstances and RunInstances show it
// (ec2_describe.cc).
void InstanceItemXml(std::string& out, const EmulatedInstance& i);
// One instancesSet <item> of TerminateInstances, StopInstances or
// StartInstances: the id, currentState and previousState (code and name).
void StateChangeXml(std::string& out, const std::string& instance_id, std::string_view before,
                    std::string_view after);
// The answer of an Auto Scaling operation with no output; `result`: with an
// empty <{op}Result/>, for the operations whose empty output AWS still wraps
// (PutWarmPool, DeleteWarmPool: botocore requires it).
EmulatorResponse AsgEmptyAnswer(std::string_view op, const std::string& request_id, bool result = false);

// How long a group waits after a launch that found no capacity before it
// tries again.
inline constexpr Seconds kGroupRetry{10};

// ---- request parameters (request_params.cc) ----

// A whole decimal int; false for anything else (empty, trailing text).
bool ParseInt(const std::string& s, int* out);
// NextToken values: "emu-<offset>".
std::string PageToken(size_t offset);
bool ParsePageToken(const std::string& token, size_t* offset);
// EC2 filter values: '*' matches any run of characters, '?' any one.
bool Glob(std::string_view pattern, std::string_view text);
// Whether one of `patterns` (Glob) matches `text`.
bool AnyGlob(const std::vector<std::string>& patterns, std::string_view text);
// An EC2 tag filter on a resource's `tags`: tag:<key> (that tag's value
// matches) or tag-key (some key matches), by Glob. Whether `tags` pass it;
// nullopt when `f` is no tag filter.
std::optional<bool> MatchesTagFilter(const cloud::Filter& f, const std::map<std::string, std::string>& tags);
// Whether a resource passes every one of `filters`: the tag filters on its
// `tags`, the others on its `fields` (filter name, value) by Glob; a filter
// it has no field for matches nothing.
bool MatchesFilters(const std::vector<cloud::Filter>& filters, const std::map<std::string, std::string>& tags,
                    std::initializer_list<std::pair<std::string_view, std::string_view>> fields);

// Whether an instance holds capacity (pending or running).
inline bool IsLive(const EmulatedInstance& i) { return i.state == "pending" || i.state == "running"; }
// Whether an instance is on its way out (shutting-down or terminated).
inline bool IsGone(const EmulatedInstance& i) { return i.state == "shutting-down" || i.state == "terminated"; }

// The form parameters of a query-protocol request (query string, then body).
struct CloudEmulator::Params {
  cloud::QueryParams q;
  std::string Get(const std::string& key) const;  // "" when absent
  bool Has(const std::string& key) const;
  bool HasPrefix(const std::string& prefix) const;
  // Values of prefix.1, prefix.2, … (up to the first gap).
  std::vector<std::string> List(const std::string& prefix) const;
  // Filters from prefix.N.Name with the values List(prefix.N.<values>), N
  // from 1 up to the first gap: ("Filter", "Value") in EC2,
  // ("Filters.member", "Values.member") in Auto Scaling.
  std::vector<cloud::Filter> Filters(const std::string& prefix, const std::string& values) const;
};

}  // namespace gpuscaler::sim
