#!/usr/bin/env bash
# npm_install: the offline Kubernetes validator's packages (pinned), into DIR once (kept while the
# pinned list is unchanged). usage: npm_install.sh DIR
set -euo pipefail
dir=$1
# kubernetes-models: the API's JSON schemas (Kubernetes 1.27); @kubernetes/client-node: the API's
# type map (OpenAPI v1.34); yaml: multi-document YAML.
pkgs=(kubernetes-models@4.5.1 @kubernetes/client-node@1.4.0 yaml@2.8.1)
stamp="$dir/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${pkgs[*]}" ]; then
  echo "already installed in $dir: ${pkgs[*]}"
  exit 0
fi
command -v npm >/dev/null || { echo "npm_install: npm not found" >&2; exit 1; }
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
if ! npm install --prefix "$dir" --no-audit --no-fund "${pkgs[@]}"; then
  echo "npm_install: could not install ${pkgs[*]} from the npm registry (offline?)" >&2
  exit 1
fi
echo "${pkgs[*]}" > "$stamp"
