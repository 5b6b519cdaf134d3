// Loading a YAML configuration document into yaml-cpp's node tree within the
// caps of config_limits.h, for the readers that walk yaml-cpp nodes
// themselves (kubeconfig, emulator scenarios, sweep grids' policy overrides).
// Policies, catalogs and daemon configurations go through DocReader, which
// applies the same caps.
//
// Why a check before the load: yaml-cpp's own tree shares the node of an
// anchor among its aliases, so loading an alias bomb is cheap (9 levels of
// ten: 0.1 s, 4 MB), but any walk of that tree visits every alias in full.
// Here the parser's events are counted first, an alias adding the size of
// the node it names, and the load stops at the alias that crosses a cap.
// The cost is in proportion to the text, not to its expansion.
//
// Pure functions; thread-safe; never throw.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "gpuscaler/model/config_limits.h"
#include "gpuscaler/status.h"

namespace gpuscaler {

// The first document of `text` (an empty text: a null node). kConfig when
// the text is not YAML, when the document with every alias expanded has more
// nodes, scalar bytes or nesting than `limits`, or when an alias is used
// inside the node it names (yaml-cpp would build a cycle that a walk follows
// forever). The message starts with the place and the field, as in
// "line 9, column 14: f[2]: alias *e (111111 nodes) takes the document past
// 250000 nodes, the cap for a configuration document with its aliases
// expanded".
Result<YAML::Node> LoadBoundedYaml(const std::string& text, const DocLimits& limits = {});

}  // namespace gpuscaler
