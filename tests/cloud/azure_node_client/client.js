// Azure's own JavaScript SDKs (@azure/arm-containerservice,
// @azure/arm-compute) against `gpuscaler cloud-emulator --provider azure`
// over HTTPS. Run by tests/cloud/azure_node_client_test.cc, which starts the
// emulator with the scenario it checks, sets NODE_EXTRA_CA_CERTS to the
// emulator's certificate and reads the JSON this prints (one object, stdout).
//
//   node client.js <emulator URL> <subscription> <tenant> <client id> <client secret>
//
// The token comes from the emulator's Entra ID endpoint (client
// credentials); the SDK clients get it through a static TokenCredential and
// are pointed at the emulator with their `endpoint` option. Long-running
// calls go through the SDKs' own pollers. Every step records what the SDK
// handed back; the C++ test decides whether that is right. A step that
// throws is recorded as {error: {code, statusCode, message}}.
'use strict';

const {ContainerServiceClient} = require('@azure/arm-containerservice');
const {ComputeManagementClient} = require('@azure/arm-compute');

const [url, subscription, tenant, clientId, clientSecret] = process.argv.slice(2);
if (!url || !subscription || !tenant || !clientId || !clientSecret) {
  console.error('usage: node client.js <emulator URL> <subscription> <tenant> <client id> <client secret>');
  process.exit(2);
}

const out = {};
async function step(name, fn) {
  try {
    out[name] = await fn();
  } catch (e) {
    out[name] = {error: {code: e.code || (e.details && e.details.error && e.details.error.code) || '',
                         statusCode: e.statusCode || 0, message: String(e.message || e)}};
  }
}

// Polls every 100 ms (the emulator's Retry-After says 1 s; the SDK honours
// an explicit interval over it).
const fast = {updateIntervalInMs: 100};

async function collect(iterator) {
  const items = [];
  for await (const item of iterator) items.push(item);
  return items;
}

async function main() {
  let token = '';
  await step('token', async () => {
    const body = new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: clientSecret,
      scope: 'https://management.azure.com/.default',
    });
    const r = await fetch(`${url}/${tenant}/oauth2/v2.0/token`, {method: 'POST', body});
    const j = await r.json();
    token = j.access_token || '';
    return {status: r.status, token_type: j.token_type, expires_in: j.expires_in, has_token: token !== ''};
  });
  const credential = {
    getToken: async () => ({token, expiresOnTimestamp: Date.now() + 3600 * 1000}),
  };
  const aks = new ContainerServiceClient(credential, subscription, {endpoint: url});
  const compute = new ComputeManagementClient(credential, subscription, {endpoint: url});
  const rg = 'rg-aks';
  const cluster = 'prod';

  await step('cluster', async () => {
    const c = await aks.managedClusters.get(rg, cluster);
    return {tags: c.tags, nodeResourceGroup: c.nodeResourceGroup};
  });
  await step('pool_create', async () => {
    const p = await aks.agentPools.createOrUpdate(rg, cluster, 'gpu', {
      count: 2, vmSize: 'Standard_NC4as_T4_v3', mode: 'User', scaleSetPriority: 'Spot',
      scaleSetEvictionPolicy: 'Delete', spotMaxPrice: -1, availabilityZones: ['1', '2'],
      nodeLabels: {'gpuscaler.io/pool': 'gpu'}, nodeTaints: ['nvidia.com/gpu=present:NoSchedule'],
      tags: {'gpuscaler-owned': 'true'},
    }, fast);
    return {count: p.count, provisioningState: p.provisioningState, scaleSetPriority: p.scaleSetPriority,
            availabilityZones: p.availabilityZones, tags: p.tags};
  });
  await step('pool_scale', async () => {
    const p = await aks.agentPools.createOrUpdate(rg, cluster, 'gpu', {count: 3}, fast);
    return {count: p.count, provisioningState: p.provisioningState};
  });
  let machines = [];
  await step('machines', async () => {
    machines = await collect(aks.machines.list(rg, cluster, 'gpu'));
    return machines.map((m) => ({name: m.name, zones: m.zones, resourceId: m.properties && m.properties.resourceId,
                                 ip: m.properties && m.properties.network.ipAddresses[0].ip}));
  });
  await step('delete_machines', async () => {
    await aks.agentPools.deleteMachines(rg, cluster, 'gpu', {machineNames: [machines[0].name]}, fast);
    const left = await collect(aks.machines.list(rg, cluster, 'gpu'));
    const one = await aks.machines.get(rg, cluster, 'gpu', left[0].name);
    const p = await aks.agentPools.get(rg, cluster, 'gpu');
    return {deleted: machines[0].name, left: left.map((m) => m.name), got: one.name, count: p.count};
  });
  await step('pool_failed', async () => {
    await aks.agentPools.createOrUpdate(rg, cluster, 'h100', {count: 2, vmSize: 'Standard_NC40ads_H100_v5'}, fast);
    return {unexpected: 'success'};
  });

  await step('vmss_create', async () => {
    const s = await compute.virtualMachineScaleSets.createOrUpdate('rg', 'batch', {
      location: 'eastus', sku: {name: 'Standard_NC24ads_A100_v4', capacity: 1}, zones: ['1'],
      tags: {'gpuscaler-owned': 'true'},
      virtualMachineProfile: {priority: 'Spot', evictionPolicy: 'Deallocate', billingProfile: {maxPrice: 2.5}},
    }, fast);
    return {capacity: s.sku.capacity, provisioningState: s.provisioningState, etag: s.etag,
            priority: s.virtualMachineProfile.priority, maxPrice: s.virtualMachineProfile.billingProfile.maxPrice};
  });
  await step('vmss_scale', async () => {
    const s = await compute.virtualMachineScaleSets.update('rg', 'batch', {sku: {capacity: 3}}, fast);
    return {capacity: s.sku.capacity, provisioningState: s.provisioningState};
  });
  await step('vmss_stale_etag', async () => {
    await compute.virtualMachineScaleSets.update('rg', 'batch', {sku: {capacity: 4}}, {...fast, ifMatch: '"1"'});
    return {unexpected: 'success'};
  });
  await step('vmss_delete_instances', async () => {
    await compute.virtualMachineScaleSets.deleteInstances('rg', 'batch', {instanceIds: ['0']},
                                                          {...fast, forceDeletion: true});
    const vms = await collect(compute.virtualMachineScaleSetVMs.list('rg', 'batch', {expand: 'instanceView'}));
    const view = await compute.virtualMachineScaleSetVMs.getInstanceView('rg', 'batch', vms[0].instanceId);
    const s = await compute.virtualMachineScaleSets.get('rg', 'batch');
    return {instanceIds: vms.map((v) => v.instanceId),
            states: vms.map((v) => v.provisioningState),
            power: view.statuses.map((x) => x.code), capacity: s.sku.capacity};
  });
  await step('vmss_aks_managed', async () => {
    const s = await compute.virtualMachineScaleSets.get(out.cluster.nodeResourceGroup,
                                                        machines[0].properties.resourceId.split('/')[8]);
    return {tags: s.tags};
  });
}

main().then(() => {
  process.stdout.write(JSON.stringify(out) + '\n');
}, (e) => {
  console.error(e);
  process.exit(1);
});
