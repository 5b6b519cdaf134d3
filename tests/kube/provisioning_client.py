#!/usr/bin/env python3
"""Kubernetes' own Python client (Debian's python3-kubernetes) as a user of
ProvisioningRequests, against the fake API server: what Kueue would write,
and what a user reads back. One step per run; prints one JSON object.

  provisioning_client.py KUBECONFIG create PODTEMPLATE.json REQUEST.json
  provisioning_client.py KUBECONFIG read NAMESPACE NAME
  provisioning_client.py KUBECONFIG delete NAMESPACE NAME
"""
import datetime
import json
import sys

from kubernetes import client, config

GROUP, VERSION, PLURAL = "autoscaling.x-k8s.io", "v1", "provisioningrequests"


def main(argv):
    kubeconfig, step = argv[1], argv[2]
    api = config.new_client_from_config(config_file=kubeconfig)
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    if step == "create":
        with open(argv[3]) as f:
            template = json.load(f)
        with open(argv[4]) as f:
            request = json.load(f)
        ns = request["metadata"]["namespace"]
        for drop in ("uid", "resourceVersion", "creationTimestamp", "generation"):
            template["metadata"].pop(drop, None)
            request["metadata"].pop(drop, None)
        request.pop("status", None)
        made_template = core.create_namespaced_pod_template(ns, template)
        made = custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, request)
        print(json.dumps({"template": made_template.metadata.name, "request": made["metadata"]["name"],
                          "uid": made["metadata"].get("uid", ""),
                          "pod_sets": made["spec"]["podSets"]}))
    elif step == "read":
        ns, name = argv[3], argv[4]
        status = custom.get_namespaced_custom_object_status(GROUP, VERSION, ns, PLURAL, name)
        listed = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
        conditions = status.get("status", {}).get("conditions", [])
        for c in conditions:
            # metav1.Time: RFC 3339 in UTC; the client must be able to read it.
            c["parsed"] = datetime.datetime.strptime(c["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ").isoformat()
        print(json.dumps({"conditions": conditions, "listed": [i["metadata"]["name"] for i in listed["items"]],
                          "spec": status["spec"]}))
    elif step == "delete":
        custom.delete_namespaced_custom_object(GROUP, VERSION, argv[3], PLURAL, argv[4])
        print(json.dumps({"deleted": argv[4]}))
    else:
        raise SystemExit("unknown step " + step)


if __name__ == "__main__":
    main(sys.argv)
