// The daemon's Kubernetes side, wired from the `kubernetes:`
// section of its configuration: the API client, the pod and node cache,
// leader election, drains off the tick. Private to src/daemon; one hook
// in SetUpDaemon calls it. Reference: docs/kubernetes.md ("What gpuscaler
// does in the cluster").
#pragma once

#include "daemon_parts.h"
#include "gpuscaler/daemon/config.h"
#include "gpuscaler/daemon/engine.h"
#include "gpuscaler/model/catalog.h"

namespace gpuscaler::daemon {

// With config.kubernetes.enabled: connects (in-cluster or kubeconfig),
// starts the list/watch cache and, when configured, leader election; wraps
// parts->cloud so that only the leader actuates; sets parts->cluster_nodes
// (node registration and health, drains on their own thread: the
// controller drains before it terminates), parts->read_cluster (pods as
// demand) and setup->is_leader. Everything
// it starts is owned by setup->keep_alive and stops with it. kConfig for a
// configuration that cannot work (no cluster, unreadable kubeconfig, bad
// leader election settings). Call after parts->cloud and parts->store are set.
// `clock` (thread-safe; the Kubernetes side keeps it alive) is the daemon's time for the
// cache's freshness and the drains' deadlines and retries: the same time
// the controller keeps (a ScaledClock under --speed); null: the system
// clock. Leader election always runs on the system clock, which the other
// replicas share.
Status SetUpKubernetes(const DaemonConfig& config, const Catalog& catalog, LiveEngineParts* parts,
                       DaemonSetup* setup, std::shared_ptr<const Clock> clock = nullptr);

}  // namespace gpuscaler::daemon
