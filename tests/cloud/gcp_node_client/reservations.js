// Google's Node.js client (googleapis) reading and consuming Compute Engine
// reservations of `gpuscaler cloud-emulator --provider gcp`. Run by the C++
// tests, which start the emulator with the scenario they check and read the
// JSON this prints (one object, stdout):
//
//   node reservations.js <emulator URL> <service-account key file> emulator
//     the scenario of tests/cloud/gcp_node_client_test.cc
//     (GoogleapisReadsAndConsumesReservations): reservations.get, list,
//     aggregatedList; bulkInsert with a specific reservationAffinity past
//     the reservation's size; instances.get; instanceTemplates.get and a
//     group whose template targets the reservation.
//   node reservations.js <emulator URL> <key file> readback <zone> <reservation>
//     what the daemon left: the reservation, and every instance of the
//     project with its reservationAffinity.
//
// Every step records what the client library handed back ({error: …} when
// it threw); the C++ test decides whether that is right.
'use strict';

const {google} = require('googleapis');

const [url, keyFile, mode, ...rest] = process.argv.slice(2);
if (!url || !keyFile || !mode) {
  console.error('usage: node reservations.js <emulator URL> <key file> emulator|readback [zone reservation]');
  process.exit(2);
}
const key = require(keyFile);
const project = key.project_id;

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

async function step(out, name, fn) {
  try {
    out[name] = await fn();
  } catch (e) {
    const data = e.response && e.response.data;
    out[name] = {error: {code: e.status || (e.response && e.response.status) || e.code || null, message: String(e.message),
      reason: data && data.error && data.error.errors && data.error.errors[0] ? data.error.errors[0].reason : null}};
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function reservationView(r) {
  return {
    kind: r.kind, name: r.name, zone: r.zone, status: r.status, selfLink: r.selfLink,
    specificReservationRequired: r.specificReservationRequired,
    count: r.specificReservation.count, inUseCount: r.specificReservation.inUseCount,
    machineType: r.specificReservation.instanceProperties.machineType,
  };
}

async function emulatorSteps(compute, out) {
  const zone = 'us-central1-a';
  async function waitDone(operation) {
    for (let i = 0; i < 600; i++) {
      const {data} = await compute.zoneOperations.wait({project, zone, operation});
      if (data.status === 'DONE') return data;
      await sleep(100);
    }
    throw new Error('operation ' + operation + ' never DONE');
  }
  await step(out, 'get', async () => {
    const {data} = await compute.reservations.get({project, zone, reservation: 'l4-rsv'});
    return reservationView(data);
  });
  await step(out, 'list', async () => {
    const {data} = await compute.reservations.list({project, zone});
    return {kind: data.kind, names: (data.items || []).map((r) => r.name)};
  });
  await step(out, 'aggregated', async () => {
    const names = [];
    let pageToken;
    let pages = 0;
    do {
      const {data} = await compute.reservations.aggregatedList({project, maxResults: 1, pageToken});
      for (const scope of Object.keys(data.items || {})) {
        for (const r of data.items[scope].reservations || []) names.push(scope + '/' + r.name);
      }
      pageToken = data.nextPageToken;
      pages++;
    } while (pageToken && pages < 20);
    return {names, pages};
  });
  await step(out, 'consume', async () => {
    const reservationAffinity = {
      consumeReservationType: 'SPECIFIC_RESERVATION',
      key: 'compute.googleapis.com/reservation-name',
      values: ['l4-rsv'],
    };
    const insert = async (count) => {
      const {data: op} = await compute.instances.bulkInsert({
        project, zone,
        requestBody: {count, minCount: count, namePattern: 'rsv-#',
          instanceProperties: {machineType: 'g2-standard-8', reservationAffinity, scheduling: {provisioningModel: 'STANDARD'}}},
      });
      return waitDone(op.name);
    };
    // Three at once (minCount 3) do not fit in two slots; two do.
    const refused = await insert(3);
    const done = await insert(2);
    const {data: inst} = await compute.instances.get({project, zone, instance: 'rsv-1'});
    const {data: r} = await compute.reservations.get({project, zone, reservation: 'l4-rsv'});
    return {
      errors: (refused.error ? refused.error.errors : []).map((e) => ({code: e.code, message: e.message})),
      refused_created: refused.instancesBulkInsertOperationMetadata.perLocationStatus['zones/' + zone].createdVmCount,
      created: done.instancesBulkInsertOperationMetadata.perLocationStatus['zones/' + zone].createdVmCount,
      reservationAffinity: inst.reservationAffinity,
      inUseCount: r.specificReservation.inUseCount,
    };
  });
  await step(out, 'template', async () => {
    const {data: mig} = await compute.instanceGroupManagers.get({project, zone, instanceGroupManager: 'l4-rsv-group'});
    const template = mig.instanceTemplate.split('/').pop();
    const {data} = await compute.instanceTemplates.get({project, instanceTemplate: template});
    return {name: data.name, reservationAffinity: data.properties.reservationAffinity};
  });
  await step(out, 'group_full', async () => {
    const {data: op} = await compute.instanceGroupManagers.createInstances({
      project, zone, instanceGroupManager: 'l4-rsv-group', requestBody: {instances: [{name: 'grp-1'}]},
    });
    await waitDone(op.name);
    const {data} = await compute.instanceGroupManagers.listManagedInstances({
      project, zone, instanceGroupManager: 'l4-rsv-group',
    });
    const m = data.managedInstances[0];
    return {name: m.name, currentAction: m.currentAction,
      errors: m.lastAttempt && m.lastAttempt.errors ? m.lastAttempt.errors.errors.map((e) => ({code: e.code, message: e.message})) : []};
  });
}

async function readback(compute, out, zone, reservation) {
  await step(out, 'reservation', async () => {
    const {data} = await compute.reservations.get({project, zone, reservation});
    return reservationView(data);
  });
  await step(out, 'instances', async () => {
    const found = [];
    let pageToken;
    do {
      const {data} = await compute.instances.aggregatedList({project, pageToken});
      for (const scope of Object.keys(data.items || {})) {
        for (const i of data.items[scope].instances || []) {
          found.push({name: i.name, zone: i.zone.split('/').pop(), status: i.status,
            provisioningModel: i.scheduling.provisioningModel, reservationAffinity: i.reservationAffinity || null});
        }
      }
      pageToken = data.nextPageToken;
    } while (pageToken);
    return found;
  });
}

async function main() {
  const compute = google.compute({version: 'v1', auth: await authClient(keyFile), rootUrl: url + '/'});
  const out = {};
  if (mode === 'emulator') {
    await emulatorSteps(compute, out);
  } else if (mode === 'readback') {
    await readback(compute, out, rest[0], rest[1]);
  } else {
    throw new Error('unknown mode ' + mode);
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
