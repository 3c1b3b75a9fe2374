// SPDX-License-Identifier: BSD-3-Clause
// validate_manifests: checks deploy/kubernetes offline, with no cluster, against the Kubernetes API:
//  1. every object against its JSON schema (kubernetes-models: required fields, types, formats);
//  2. every field name and value type against the API's own type map (@kubernetes/client-node's
//     models, generated from the OpenAPI spec): a misspelt field is an error, not silently dropped;
//  3. what ties the objects together: selectors match their pods' labels, mounts name volumes,
//     references name Secrets, ConfigMaps and Services defined here, kustomization lists every file;
//  4. the cellgate config and arguments use only options `cellgate serve --help` knows.
// usage: node validate_manifests.mjs MANIFEST_DIR NODE_MODULES_PARENT CELLGATE_BINARY
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, modulesParent, cellgate] = process.argv.slice(2);
if (!dir || !modulesParent || !cellgate) {
  console.error("usage: node validate_manifests.mjs MANIFEST_DIR NODE_MODULES_PARENT CELLGATE_BINARY");
  process.exit(2);
}
const require = createRequire(join(modulesParent, "package.json"));
const YAML = require("yaml");
const models = await import(
  pathToFileURL(join(modulesParent, "node_modules/@kubernetes/client-node/dist/gen/models/all.js")).href);

const errors = [];
const fail = (where, what) => errors.push(`${where}: ${what}`);

// --- 1. the JSON schema of the object's kind ---
function schemaCheck(where, doc) {
  const [group, version] = doc.apiVersion.includes("/") ? doc.apiVersion.split("/") : [null, doc.apiVersion];
  const path = group ? `kubernetes-models/${group}/${version}/${doc.kind}` : `kubernetes-models/${version}/${doc.kind}`;
  let Model;
  try {
    Model = require(path)[doc.kind];
  } catch (e) {
    return fail(where, `unknown apiVersion/kind ${doc.apiVersion} ${doc.kind}`);
  }
  try {
    new Model(doc).validate();
  } catch (e) {
    fail(where, `schema: ${e.message}`);
  }
}

// --- 2. field names and value types, recursively ---
function typeCheck(value, type, path) {
  if (value === null || type === "any" || type === "object") return;
  const array = /^Array<(.+)>$/.exec(type);
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) return fail(path, `expected a list (${type})`);
    value.forEach((v, i) => typeCheck(v, array[1], `${path}[${i}]`));
  } else if (map) {
    if (typeof value !== "object" || Array.isArray(value)) return fail(path, `expected a map (${type})`);
    for (const [k, v] of Object.entries(value)) typeCheck(v, map[1], `${path}.${k}`);
  } else if (type === "string" || type === "Date") {
    if (typeof value !== "string") fail(path, `expected a string, got ${JSON.stringify(value)}`);
  } else if (type === "number") {
    if (typeof value !== "number") fail(path, `expected a number, got ${JSON.stringify(value)}`);
  } else if (type === "boolean") {
    if (typeof value !== "boolean") fail(path, `expected true or false, got ${JSON.stringify(value)}`);
  } else if (type === "IntOrString") {
    if (typeof value !== "number" && typeof value !== "string") fail(path, "expected a number or a string");
  } else {
    const cls = models[type];
    if (!cls || !cls.attributeTypeMap) return fail(path, `no API type ${type}`);
    if (typeof value !== "object" || Array.isArray(value)) return fail(path, `expected an object (${type})`);
    const fields = new Map(cls.attributeTypeMap.map((a) => [a.baseName, a.type]));
    for (const [k, v] of Object.entries(value)) {
      if (!fields.has(k)) fail(`${path}.${k}`, `no such field in ${type}`);
      else typeCheck(v, fields.get(k), `${path}.${k}`);
    }
  }
}

function apiType(doc) {
  const version = doc.apiVersion.split("/").pop();
  return version.charAt(0).toUpperCase() + version.slice(1) + doc.kind;  // apps/v1 StatefulSet → V1StatefulSet
}

// --- read everything ---
const files = readdirSync(dir).filter((f) => f.endsWith(".yaml")).sort();
const objects = [];  // {file, doc}
let kustomization = null;
for (const file of files) {
  const docs = YAML.parseAllDocuments(readFileSync(join(dir, file), "utf8"));
  for (const d of docs) {
    if (d.errors.length) {
      fail(file, `YAML: ${d.errors[0].message}`);
      continue;
    }
    const doc = d.toJS();
    if (!doc) continue;
    if (doc.kind === "Kustomization") {
      kustomization = { file, doc };
      continue;
    }
    if (!doc.apiVersion || !doc.kind || !doc.metadata?.name) {
      fail(file, "an object without apiVersion, kind or metadata.name");
      continue;
    }
    objects.push({ file, doc });
  }
}

for (const { file, doc } of objects) {
  const where = `${file}: ${doc.kind}/${doc.metadata.name}`;
  schemaCheck(where, doc);
  typeCheck(doc, apiType(doc), where);
}

// --- 3. references between objects ---
const named = (kind) => new Set(objects.filter((o) => o.doc.kind === kind).map((o) => o.doc.metadata.name));
const secrets = named("Secret");
const configMaps = named("ConfigMap");
const services = named("Service");
const matches = (selector, labels) => Object.entries(selector || {}).every(([k, v]) => labels?.[k] === v);
const workloads = objects.filter((o) => ["StatefulSet", "Deployment", "DaemonSet"].includes(o.doc.kind));

for (const { file, doc } of workloads) {
  const where = `${file}: ${doc.kind}/${doc.metadata.name}`;
  const pod = doc.spec.template;
  const labels = pod.metadata?.labels;
  if (!matches(doc.spec.selector?.matchLabels, labels)) fail(where, "selector does not match the pod template's labels");
  if (doc.kind === "StatefulSet" && !services.has(doc.spec.serviceName))
    fail(where, `serviceName ${doc.spec.serviceName} is no Service here`);
  const volumes = new Set([...(pod.spec.volumes || []), ...(doc.spec.volumeClaimTemplates || []).map((c) => c.metadata)]
    .map((v) => v.name));
  for (const v of pod.spec.volumes || []) {
    if (v.configMap && !configMaps.has(v.configMap.name)) fail(where, `volume ${v.name}: no ConfigMap ${v.configMap.name}`);
    if (v.secret && !secrets.has(v.secret.secretName)) fail(where, `volume ${v.name}: no Secret ${v.secret.secretName}`);
  }
  for (const c of pod.spec.containers || []) {
    const ports = new Set((c.ports || []).map((p) => p.name));
    for (const m of c.volumeMounts || []) if (!volumes.has(m.name)) fail(where, `${c.name} mounts unknown volume ${m.name}`);
    for (const e of c.env || []) {
      const s = e.valueFrom?.secretKeyRef;
      if (s && !secrets.has(s.name)) fail(where, `${c.name} env ${e.name}: no Secret ${s.name}`);
      const m = e.valueFrom?.configMapKeyRef;
      if (m && !configMaps.has(m.name)) fail(where, `${c.name} env ${e.name}: no ConfigMap ${m.name}`);
    }
    for (const probe of [c.readinessProbe, c.livenessProbe, c.startupProbe]) {
      const port = probe?.httpGet?.port;
      if (typeof port === "string" && !ports.has(port)) fail(where, `${c.name}: a probe names port ${port}, not declared`);
    }
  }
}
for (const { file, doc } of objects.filter((o) => o.doc.kind === "Service")) {
  const where = `${file}: Service/${doc.metadata.name}`;
  const backing = workloads.filter((w) => matches(doc.spec.selector, w.doc.spec.template.metadata?.labels));
  if (!backing.length) fail(where, "its selector matches no pod template here");
  for (const p of doc.spec.ports || []) {
    if (typeof p.targetPort !== "string") continue;
    const declared = backing.some((w) => w.doc.spec.template.spec.containers.some((c) =>
      (c.ports || []).some((cp) => cp.name === p.targetPort)));
    if (!declared) fail(where, `targetPort ${p.targetPort} is no named container port`);
  }
}
if (!kustomization) {
  fail(dir, "no kustomization.yaml");
} else {
  const listed = new Set(kustomization.doc.resources || []);
  for (const f of files) if (f !== kustomization.file && !listed.has(f)) fail(kustomization.file, `does not list ${f}`);
  for (const f of listed) if (!files.includes(f)) fail(kustomization.file, `lists ${f}, which does not exist`);
}

// --- 4. cellgate's own options ---
const help = execFileSync(cellgate, ["serve", "--help"], { encoding: "utf8" });
const flags = new Set([...help.matchAll(/^ {2}--([a-z0-9-]+)/gm)].map((m) => m[1]));
const envs = new Set([...help.matchAll(/env (CELLGATE_[A-Z0-9_]+)/g)].map((m) => m[1]));
for (const { file, doc } of objects.filter((o) => o.doc.kind === "ConfigMap" && o.doc.metadata.name === "cellgate-config")) {
  let config;
  try {
    config = JSON.parse(doc.data["config.json"]);
  } catch (e) {
    fail(file, `config.json is not JSON: ${e.message}`);
    continue;
  }
  for (const key of Object.keys(config))
    if (!flags.has(key.replaceAll("_", "-"))) fail(file, `config.json: cellgate serve has no option for key ${key}`);
}
for (const { file, doc } of workloads.filter((w) => w.doc.metadata.name === "cellgate")) {
  for (const c of doc.spec.template.spec.containers) {
    for (const a of c.args || []) {
      const m = /^--([a-z0-9-]+)/.exec(a);
      if (m && !flags.has(m[1])) fail(file, `${c.name}: cellgate serve has no option --${m[1]}`);
    }
    for (const e of c.env || [])
      if (e.name.startsWith("CELLGATE_") && !envs.has(e.name)) fail(file, `${c.name}: cellgate serve reads no ${e.name}`);
  }
}

if (errors.length) {
  for (const e of errors) console.error(e);
  console.error(`${errors.length} problem(s) in ${dir}`);
  process.exit(1);
}
console.log(`${objects.length} objects in ${files.length} files: valid`);
