// Google's own Node.js client (googleapis, google-auth-library) against
// `gpuscaler cloud-emulator --provider gcp`. Run by
// tests/cloud/gcp_node_client_test.cc, which starts the emulator with the
// scenario it checks and reads the JSON this prints (one object, stdout).
//
//   node client.js <emulator URL> <service-account key file> <unregistered key file>
//
// Every step records what the client library handed back; the C++ test
// decides whether that is right. A step that throws is recorded as
// {error: {code, message}} so the test can say which step failed and why.
'use strict';

const crypto = require('crypto');
const {google} = require('googleapis');

const [url, keyFile, strangerKeyFile] = process.argv.slice(2);
if (!url || !keyFile || !strangerKeyFile) {
  console.error('usage: node client.js <emulator URL> <key file> <unregistered key file>');
  process.exit(2);
}
const key = require(keyFile);
const project = key.project_id;
const scopes = ['https://www.googleapis.com/auth/compute', 'https://www.googleapis.com/auth/cloud-billing.readonly'];

// google-auth-library posts the JWT-bearer grant to the fixed
// https://oauth2.googleapis.com/token and ignores the key file's token_uri.
// Its transporter (gaxios) takes request interceptors: route that one URL to
// the key's token_uri, leave everything else alone.
function routeTokenRequests(client, tokenUri) {
  client.transporter.interceptors.request.add({
    resolved: async (options) => {
      if (String(options.url) === 'https://oauth2.googleapis.com/token') options.url = new URL(tokenUri);
      return options;
    },
  });
}

async function authClient(file) {
  const auth = new google.auth.GoogleAuth({keyFilename: file, scopes});
  const client = await auth.getClient();
  routeTokenRequests(client, require(file).token_uri);
  return client;
}

function failure(e) {
  const data = e.response && e.response.data;
  return {
    error: {
      code: e.status || (e.response && e.response.status) || e.code || null,
      message: String(e.message),
      reason: data && data.error && data.error.errors && data.error.errors[0] ? data.error.errors[0].reason : null,
      oauth: data && typeof data.error === 'string' ? data.error : null,
    },
  };
}

async function step(out, name, fn) {
  try {
    out[name] = await fn();
  } catch (e) {
    out[name] = failure(e);
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const out = {};
  const client = await authClient(keyFile);
  const compute = google.compute({version: 'v1', auth: client, rootUrl: url + '/'});
  const unauthenticated = google.compute({version: 'v1', rootUrl: url + '/'});

  // Waits on a zone operation with zoneOperations.wait (which may return
  // before DONE) until it is DONE; also reads it once with get.
  async function waitDone(zone, operation) {
    for (let i = 0; i < 600; i++) {  // 60 s: sanitizer builds on a loaded CI machine are slow
      const {data} = await compute.zoneOperations.wait({project, zone, operation});
      if (data.status === 'DONE') return data;
      await sleep(100);
    }
    throw new Error('operation ' + operation + ' never DONE');
  }

  await step(out, 'token', async () => {
    const {token} = await client.getAccessToken();
    return {token_prefix: token.slice(0, 5), length: token.length};
  });
  await step(out, 'stranger_token', async () => {
    const stranger = await authClient(strangerKeyFile);
    const {token} = await stranger.getAccessToken();
    return {token_prefix: token.slice(0, 5)};
  });
  await step(out, 'unauthenticated', async () => {
    await unauthenticated.instances.aggregatedList({project});
    return {};
  });

  await step(out, 'mig_create', async () => {
    const {data: op} = await compute.instanceGroupManagers.createInstances({
      project, zone: 'us-central1-a', instanceGroupManager: 'l4-pool',
      requestBody: {instances: [{name: 'node-a'}, {name: 'node-b'}]},
    });
    const got = await compute.zoneOperations.get({project, zone: 'us-central1-a', operation: op.name});
    const done = await waitDone('us-central1-a', op.name);
    return {operationType: op.operationType, get_name: got.data.name, done_status: done.status, error: done.error || null};
  });

  await step(out, 'bulk_insert', async () => {
    const requestId = crypto.randomUUID();
    const requestBody = {
      count: 2,
      namePattern: 'bare-####',
      instanceProperties: {
        machineType: 'g2-standard-8',
        labels: {'gpuscaler-cluster': 'prod', 'gpuscaler-pool': 'bare'},
        scheduling: {provisioningModel: 'SPOT', instanceTerminationAction: 'DELETE'},
      },
    };
    const {data: op} = await compute.instances.bulkInsert({project, zone: 'us-central1-b', requestId, requestBody});
    const {data: again} = await compute.instances.bulkInsert({project, zone: 'us-central1-b', requestId, requestBody});
    const done = await waitDone('us-central1-b', op.name);
    const {data: inst} = await compute.instances.get({project, zone: 'us-central1-b', instance: 'bare-0001'});
    return {
      same_operation: op.name === again.name,
      done_status: done.status,
      created: done.instancesBulkInsertOperationMetadata.perLocationStatus['zones/us-central1-b'].createdVmCount,
      labels: inst.labels,
      scheduling: inst.scheduling,
      machineType: inst.machineType,
    };
  });

  await step(out, 'capacity', async () => {
    const {data: op} = await compute.instances.bulkInsert({
      project, zone: 'us-central1-c',
      requestBody: {count: 1, namePattern: 'h100-#', instanceProperties: {machineType: 'a3-highgpu-8g'}},
    });
    const done = await waitDone('us-central1-c', op.name);
    return {status: done.status, codes: (done.error ? done.error.errors : []).map((e) => e.code)};
  });

  // A compact placement policy: insert (a regional operation, waited for
  // with regionOperations.wait), get, and a second insert of the name.
  await step(out, 'placement_policy', async () => {
    const region = 'us-central1';
    const requestBody = {name: 'train-gangs', groupPlacementPolicy: {collocation: 'COLLOCATED'}};
    const {data: op} = await compute.resourcePolicies.insert({project, region, requestId: crypto.randomUUID(), requestBody});
    let done = op;
    for (let i = 0; i < 600 && done.status !== 'DONE'; i++) {
      ({data: done} = await compute.regionOperations.wait({project, region, operation: op.name}));
      if (done.status !== 'DONE') await sleep(100);
    }
    const {data: policy} = await compute.resourcePolicies.get({project, region, resourcePolicy: 'train-gangs'});
    let duplicate = null;
    try {
      await compute.resourcePolicies.insert({project, region, requestBody});
    } catch (e) {
      duplicate = failure(e).error;
    }
    let unknown = null;
    try {
      await compute.resourcePolicies.get({project, region, resourcePolicy: 'no-such-policy'});
    } catch (e) {
      unknown = failure(e).error;
    }
    return {
      operation_region: op.region, done_status: done.status, error: done.error || null,
      name: policy.name, collocation: policy.groupPlacementPolicy.collocation, policy_status: policy.status,
      duplicate_code: duplicate && duplicate.code, unknown_code: unknown && unknown.code,
    };
  });

  // bulkInsert with minCount: above the free capacity (2 in the zone) it
  // creates nothing; within it, all, under the placement policy.
  await step(out, 'min_count', async () => {
    const zone = 'us-central1-a';
    const gang = (prefix, n) => ({
      count: n, minCount: n, namePattern: prefix + '-#',
      instanceProperties: {machineType: 'a2-highgpu-8g', resourcePolicies: ['train-gangs']},
    });
    const {data: shortOp} = await compute.instances.bulkInsert({project, zone, requestBody: gang('gang-short', 3)});
    const short = await waitDone(zone, shortOp.name);
    let shortGet = null;
    try {
      await compute.instances.get({project, zone, instance: 'gang-short-1'});
    } catch (e) {
      shortGet = failure(e).error.code;
    }
    const {data: fitOp} = await compute.instances.bulkInsert({project, zone, requestBody: gang('gang', 2)});
    const fit = await waitDone(zone, fitOp.name);
    const {data: member} = await compute.instances.get({project, zone, instance: 'gang-2'});
    return {
      short_codes: (short.error ? short.error.errors : []).map((e) => e.code),
      short_created: short.instancesBulkInsertOperationMetadata.perLocationStatus['zones/' + zone].createdVmCount,
      short_get: shortGet,
      fit_error: fit.error || null,
      fit_created: fit.instancesBulkInsertOperationMetadata.perLocationStatus['zones/' + zone].createdVmCount,
      member_policies: member.resourcePolicies,
    };
  });

  await step(out, 'aggregated_list', async () => {
    const names = [];
    let pageToken;
    let pages = 0;
    do {
      const {data} = await compute.instances.aggregatedList({
        project, filter: 'labels.gpuscaler-cluster = "prod"', maxResults: 1, pageToken,
      });
      for (const scope of Object.keys(data.items || {})) {
        for (const i of data.items[scope].instances || []) names.push(i.name);
      }
      pageToken = data.nextPageToken;
      pages++;
    } while (pageToken && pages < 50);
    return {names: names.sort(), pages};
  });

  await step(out, 'list_managed', async () => {
    const {data} = await compute.instanceGroupManagers.listManagedInstances({
      project, zone: 'us-central1-a', instanceGroupManager: 'l4-pool',
    });
    const {data: mig} = await compute.instanceGroupManagers.get({
      project, zone: 'us-central1-a', instanceGroupManager: 'l4-pool',
    });
    return {
      members: data.managedInstances.map((m) => ({name: m.name, currentAction: m.currentAction,
        errors: m.lastAttempt && m.lastAttempt.errors ? m.lastAttempt.errors.errors.map((e) => e.code) : []})),
      targetSize: mig.targetSize,
    };
  });

  await step(out, 'mig_delete', async () => {
    const {data: op} = await compute.instanceGroupManagers.deleteInstances({
      project, zone: 'us-central1-a', instanceGroupManager: 'l4-pool',
      requestBody: {instances: ['zones/us-central1-a/instances/node-a']},
    });
    await waitDone('us-central1-a', op.name);
    const {data: mig} = await compute.instanceGroupManagers.get({
      project, zone: 'us-central1-a', instanceGroupManager: 'l4-pool',
    });
    return {operationType: op.operationType, targetSize: mig.targetSize};
  });

  await step(out, 'delete', async () => {
    const {data: op} = await compute.instances.delete({project, zone: 'us-central1-b', instance: 'bare-0002'});
    const done = await waitDone('us-central1-b', op.name);
    let code = null;
    try {
      await compute.instances.get({project, zone: 'us-central1-b', instance: 'bare-0002'});
    } catch (e) {
      code = e.status || (e.response && e.response.status);
    }
    return {operationType: op.operationType, done_status: done.status, get_after: code};
  });

  await step(out, 'preempted', async () => {
    // The scenario preempts the first RUNNING g2-standard-4 Spot VM.
    const {data: op} = await compute.instances.bulkInsert({
      project, zone: 'us-central1-b',
      requestBody: {
        count: 1, namePattern: 'victim-#',
        instanceProperties: {machineType: 'g2-standard-4', scheduling: {provisioningModel: 'SPOT'}},
      },
    });
    await waitDone('us-central1-b', op.name);
    for (let i = 0; i < 600; i++) {
      const {data} = await compute.zoneOperations.list({
        project, zone: 'us-central1-b', filter: 'operationType="compute.instances.preempted"',
      });
      if (data.items && data.items.length) {
        return {count: data.items.length, targetLink: data.items[0].targetLink, status: data.items[0].status};
      }
      await sleep(100);
    }
    return {count: 0};
  });

  // The Cloud Billing Catalog: Compute Engine's SKUs, one per page.
  await step(out, 'billing_skus', async () => {
    const billing = google.cloudbilling({version: 'v1', auth: client, rootUrl: url + '/'});
    const skus = [];
    let pageToken;
    let pages = 0;
    do {
      const {data} = await billing.services.skus.list({
        parent: 'services/6F81-5844-456A', currencyCode: 'USD', pageSize: 1, pageToken,
      });
      for (const sku of data.skus || []) {
        const price = sku.pricingInfo[0].pricingExpression.tieredRates[0].unitPrice;
        skus.push({
          skuId: sku.skuId,
          description: sku.description,
          usageType: sku.category.usageType,
          resourceGroup: sku.category.resourceGroup,
          serviceRegions: sku.serviceRegions,
          usageUnit: sku.pricingInfo[0].pricingExpression.usageUnit,
          effectiveTime: sku.pricingInfo[0].effectiveTime,
          units: price.units,
          nanos: price.nanos,
          currencyCode: price.currencyCode,
        });
      }
      pageToken = data.nextPageToken;
      pages++;
    } while (pageToken && pages < 50);
    return {skus, pages};
  });

  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
