// How large a configuration file may be: policies, daemon configurations,
// instance catalogs, emulator scenarios, sweep grids, kubeconfigs and the
// small files they name (tokens, certificates).
//
// Two bounds, because YAML aliases let a few hundred bytes stand for
// millions of nodes ("billion laughs": ten aliases of a ten-item list,
// nested seven deep, is 10^7 nodes from 400 bytes):
//  - the file's size, checked before it is read (ReadConfigFile), and
//  - the document as it would be with every alias expanded: its nodes, the
//    bytes of its scalars and its nesting depth, counted from the parser's
//    events before any node is built (DocReader::Parse, LoadBoundedYaml).
//
// The caps sit far above any real file, so that only a hostile or broken
// file meets them. The largest files in this repository (measured):
//   config/catalogs/gcp.yaml       30,388 bytes   2,245 nodes   6 levels deep
//   config/catalogs/aws.yaml       29,869 bytes   2,681 nodes   6 levels deep
//   policies/inference.yaml         4,755 bytes     310 nodes   5 levels deep
//   policies/node-templates.yaml    2,629 bytes     191 nodes   7 levels deep
// so the file cap is 138x the largest catalog and 880x the largest policy,
// the node cap 93x the largest catalog (a catalog of every AWS region, ten
// times ours, would still be a tenth of it) and 800x the largest policy, and
// the depth cap 14x the deepest file (tests/model/config_limits_test.cc
// checks that every shipped file fits in a tenth of each cap). Just under
// the node cap a document costs 166 MB while it is parsed (a 249,000-item
// YAML list through `gpuscaler policy check`: yaml-cpp's nodes and ours),
// well inside the daemon's 1 GiB memory limit.
#pragma once

#include <cstdint>

namespace gpuscaler {

// 4 MiB.
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t{4} << 20;

struct DocLimits {
  // Nodes of the expanded document: every scalar, null, list and mapping,
  // keys included, an alias counting as the whole node it names.
  uint64_t max_nodes = 250'000;
  // Bytes of all scalars of the expanded document. 4x the file cap: a file
  // without aliases cannot reach it, so it only stops alias expansion.
  uint64_t max_scalar_bytes = uint64_t{16} << 20;
  // Lists and mappings inside one another.
  int max_depth = 100;
};

}  // namespace gpuscaler
