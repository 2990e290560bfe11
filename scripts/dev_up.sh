#!/usr/bin/env bash
# `pulumi up` of the dev stack on the embedded local default: OPA (with the policy bundle) and the
# scheduler on loopback, Kubernetes objects rendered to build/rendered/dev. Stops both at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/env.sh
.venv/bin/greenops serve --opa-port 8181 --scheduler-port 8080 > build/serve.log 2>&1 &
serve=$!
trap 'kill $serve 2>/dev/null; wait $serve 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
    grep -q "Ctrl-C stops both" build/serve.log 2>/dev/null && break
    kill -0 $serve 2>/dev/null || { cat build/serve.log; exit 1; }
    sleep 0.3
done
pulumi stack select dev --create --non-interactive >/dev/null
pulumi up --stack dev --yes --non-interactive --skip-preview "$@"
echo
echo "Placements (also: pulumi stack output placements --stack dev):"
pulumi stack output placements --stack dev --json \
    | .venv/bin/python -c 'import json, sys; from greenops.insight import report; print(report.table(report.account(json.load(sys.stdin))))'
echo
echo "Manifests of the due workloads: build/rendered/dev/1-manifest/"
