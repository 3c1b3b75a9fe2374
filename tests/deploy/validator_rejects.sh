#!/usr/bin/env bash
# validator_rejects: the manifest check must fail on broken manifests, each for its own reason; a
# validator that passes everything would let the real check pass while proving nothing.
# usage: validator_rejects.sh MANIFEST_DIR NODE_MODULES_PARENT CELLGATE_BINARY
set -euo pipefail
src=$1 modules=$2 cellgate=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

# expect NAME SED_SCRIPT FILE MESSAGE: the validator on a copy with FILE edited by SED_SCRIPT must
# exit 1 and say MESSAGE.
expect() {
  local name=$1 script=$2 file=$3 message=$4
  rm -rf "$work/m" && cp -r "$src" "$work/m"
  sed -i "$script" "$work/m/$file"
  if cmp -s "$src/$file" "$work/m/$file"; then
    echo "FAIL $name: the edit changed nothing (fix the test)"; failed=1; return
  fi
  local out rc=0
  out=$(node "$here/validate_manifests.mjs" "$work/m" "$modules" "$cellgate" 2>&1) || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -qF -- "$message" <<<"$out"; then
    echo "FAIL $name: rc=$rc, expected 1 and '$message' in:"; echo "$out"; failed=1
  else
    echo "ok   $name"
  fi
}

expect misspelt-field 's/readinessProbe:/readinesProbe:/' cellgate.yaml "no such field in V1Container"
expect wrong-type 's/replicas: 3/replicas: three/' cellgate.yaml "replicas"
expect missing-required 's/^  serviceName: cellgate-nodes$//' cellgate.yaml "serviceName"
expect selector-mismatch '0,/        app.kubernetes.io\/name: cellgate$/s//        app.kubernetes.io\/name: other/' cellgate.yaml "selector"
expect unknown-volume '0,/- name: config$/s//- name: konfig/' cellgate.yaml "mounts unknown volume"
expect unknown-secret 's/^                  name: cellgate-token$/                  name: cellgate-tokens/' cellgate.yaml "no Secret cellgate-token"
expect unknown-config-key 's/"spawner": "jail"/"spawnr": "jail"/' cellgate.yaml "no option for key spawnr"
expect unknown-flag 's|args: \["--config"|args: ["--konfig"|' cellgate.yaml "no option --konfig"
expect unlisted-file 's/  - postgres.yaml//' kustomization.yaml "does not list postgres.yaml"
expect bad-yaml 's/^kind: StatefulSet$/kind: [StatefulSet/' postgres.yaml "YAML"
exit $failed
