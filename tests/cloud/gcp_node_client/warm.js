// Google's Node.js client (googleapis) driving the standby actions of
// managed instance groups on `gpuscaler cloud-emulator --provider gcp`:
// stopInstances, startInstances, suspendInstances and resumeInstances, read
// back with listManagedInstances, instanceGroupManagers.get and
// instances.get. Run by tests/cloud/gcp_node_client_test.cc
// (GoogleapisStopsStartsSuspendsAndResumesGroupMembers), which starts the
// emulator with the scenario it checks and reads the JSON this prints (one
// object, stdout):
//
//   node warm.js <emulator URL> <service-account key file>
//
// Every step records what the client library handed back ({error: …} when
// it threw); the C++ test decides whether that is right.
'use strict';

const {google} = require('googleapis');

const [url, keyFile] = process.argv.slice(2);
if (!url || !keyFile) {
  console.error('usage: node warm.js <emulator URL> <key file>');
  process.exit(2);
}
const key = require(keyFile);
const project = key.project_id;
const zone = 'us-central1-a';

async function authClient(file) {
  const auth = new google.auth.GoogleAuth({keyFilename: file, scopes: ['https://www.googleapis.com/auth/compute']});
  const client = await auth.getClient();
  // google-auth-library posts the JWT grant to Google's fixed token URL;
  // send it to the key's token_uri (the emulator) instead.
  client.transporter.interceptors.request.add({
    resolved: async (options) => {
      if (String(options.url) === 'https://oauth2.googleapis.com/token') options.url = new URL(require(file).token_uri);
      return options;
    },
  });
  return client;
}

function failure(e) {
  const data = e.response && e.response.data;
  return {error: {code: e.status || (e.response && e.response.status) || e.code || null, message: String(e.message),
    reason: data && data.error && data.error.errors && data.error.errors[0] ? data.error.errors[0].reason : null}};
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
  const compute = google.compute({version: 'v1', auth: await authClient(keyFile), rootUrl: url + '/'});
  const instance = (name) => `zones/${zone}/instances/${name}`;

  async function waitDone(operation) {
    for (let i = 0; i < 600; i++) {
      const {data} = await compute.zoneOperations.wait({project, zone, operation});
      if (data.status === 'DONE') return data;
      await sleep(100);
    }
    throw new Error('operation ' + operation + ' never DONE');
  }
  async function member(group, name) {
    const {data} = await compute.instanceGroupManagers.listManagedInstances({project, zone, instanceGroupManager: group});
    return (data.managedInstances || []).find((m) => m.name === name) || null;
  }
  // Polls the member every 50 ms until its instanceStatus is `status` and
  // its currentAction NONE; every distinct "ACTION/STATUS" seen, in order.
  async function follow(group, name, status) {
    const seen = [];
    for (let i = 0; i < 1200; i++) {
      const m = await member(group, name);
      const pair = m ? `${m.currentAction}/${m.instanceStatus || ''}` : '(absent)';
      if (seen[seen.length - 1] !== pair) seen.push(pair);
      if (m && m.instanceStatus === status && m.currentAction === 'NONE') return seen;
      await sleep(50);
    }
    seen.push('(timed out)');
    return seen;
  }
  async function group(name) {
    const {data} = await compute.instanceGroupManagers.get({project, zone, instanceGroupManager: name});
    return {targetSize: data.targetSize, targetStoppedSize: data.targetStoppedSize,
      targetSuspendedSize: data.targetSuspendedSize};
  }
  // POSTs the standby action and waits for its operation.
  async function act(verb, groupName, names, extra) {
    const {data: op} = await compute.instanceGroupManagers[verb]({
      project, zone, instanceGroupManager: groupName,
      requestBody: Object.assign({instances: names.map(instance)}, extra || {}),
    });
    const done = await waitDone(op.name);
    return {operationType: op.operationType, done_status: done.status, error: done.error || null};
  }

  await step(out, 'create', async () => {
    for (const [g, n] of [['l4-pool', 'node-w'], ['cpu-pool', 'cpu-w']]) {
      const {data: op} = await compute.instanceGroupManagers.createInstances({
        project, zone, instanceGroupManager: g, requestBody: {instances: [{name: n}]},
      });
      await waitDone(op.name);
    }
    const {data: inst} = await compute.instances.get({project, zone, instance: 'node-w'});
    return {l4: await follow('l4-pool', 'node-w', 'RUNNING'), cpu: await follow('cpu-pool', 'cpu-w', 'RUNNING'),
      id: inst.id};
  });

  await step(out, 'stop', async () => {
    const op = await act('stopInstances', 'l4-pool', ['node-w'], {forceStop: true});
    const during = await group('l4-pool');
    const seen = await follow('l4-pool', 'node-w', 'TERMINATED');
    const {data: inst} = await compute.instances.get({project, zone, instance: 'node-w'});
    return Object.assign(op, {seen, group: during, status: inst.status, lastStopTimestamp: inst.lastStopTimestamp || null});
  });

  await step(out, 'start', async () => {
    const op = await act('startInstances', 'l4-pool', ['node-w']);
    const during = await group('l4-pool');
    const seen = await follow('l4-pool', 'node-w', 'RUNNING');
    const {data: inst} = await compute.instances.get({project, zone, instance: 'node-w'});
    return Object.assign(op, {seen, group: during, status: inst.status, id: inst.id});
  });

  await step(out, 'suspend', async () => {
    const op = await act('suspendInstances', 'cpu-pool', ['cpu-w'], {forceSuspend: true});
    const seen = await follow('cpu-pool', 'cpu-w', 'SUSPENDED');
    const {data: inst} = await compute.instances.get({project, zone, instance: 'cpu-w'});
    return Object.assign(op, {seen, group: await group('cpu-pool'), status: inst.status});
  });

  await step(out, 'resume', async () => {
    const op = await act('resumeInstances', 'cpu-pool', ['cpu-w']);
    const seen = await follow('cpu-pool', 'cpu-w', 'RUNNING');
    return Object.assign(op, {seen, group: await group('cpu-pool')});
  });

  // Refused calls: a VM with GPUs cannot be suspended; a stranger is not a
  // member.
  await step(out, 'suspend_gpu', async () => act('suspendInstances', 'l4-pool', ['node-w']));
  await step(out, 'stop_stranger', async () => act('stopInstances', 'l4-pool', ['ghost']));

  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
