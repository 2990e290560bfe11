#!/usr/bin/env bash
# Build the pinned Go tools (Pulumi CLI, the Kubernetes provider plugin, OPA, Regal, helm, etcd,
# kube-apiserver, kube-controller-manager, a node's kubelet, kube-proxy and kube-scheduler, CoreDNS,
# prometheus, promtool, cosign, syft) from the Go module proxy into .tools/bin.
#
#   tools/install.sh            build what is missing (or stale), reuse the rest
#   tools/install.sh opa helm   only these
#
# Each wrapper module in tools/go/<name> pins one upstream module in its go.mod/go.sum; that file
# is the single source of each version. Binaries are cached outside the checkout, keyed by the
# wrapper's go.mod + go.sum + the Go version, so a fresh clone on a machine that built them before
# only links them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WRAPPERS=$ROOT/tools/go
BIN=$ROOT/.tools/bin
CACHE=${GREENOPS_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/greenops/tools}

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
# The checksum database behind this machine's proxy does not know some pulumi pseudo-versions;
# go.sum (committed) pins their hashes instead.
export GONOSUMDB=${GONOSUMDB:-github.com/pulumi}

mkdir -p "$BIN" "$CACHE"

say() { printf '[tools] %s\n' "$*"; }
fail() { printf '[tools] FAILED: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null || fail "go is not installed (needed to build the tools)"
GO_VERSION=$(go env GOVERSION)

# module version pinned in a wrapper's go.mod
pinned() { (cd "$WRAPPERS/$1" && go list -m -f '{{.Version}}' "$2"); }
# a pinned module's source folder, downloading it first on a cold module cache
module_dir() {
    local dir
    dir=$(cd "$WRAPPERS/$1" && go mod download "$2" && go list -m -f '{{.Dir}}' "$2")
    [ -n "$dir" ] && [ -d "$dir" ] || { echo "module $2 has no source folder" >&2; return 1; }
    echo "$dir"
}

# A tool built from another tool's wrapper module (the same pins, other main packages).
declare -A WRAPPER_OF=([kubelet]=kubernetes)
wrapper() { echo "$WRAPPERS/${WRAPPER_OF[$1]:-$1}"; }

cache_key() {
    local w
    w=$(wrapper "$1")
    # a tool built from another's wrapper adds its own name (its binaries are not that tool's)
    cat "$w/go.mod" "$w/go.sum" "$w"/*.go <(echo "$GO_VERSION $2${WRAPPER_OF[$1]:+ $1}") | sha256sum | cut -c1-16
}

# build_tool NAME LABEL -- builds into $CACHE/NAME-KEY via build_NAME, then links the outputs
build_tool() {
    local name=$1 label=$2 key dir start
    key=$(cache_key "$name" "$label")
    dir=$CACHE/$name-$key
    if [ -f "$dir/.complete" ]; then
        say "$name $label: cached"
    else
        say "$name $label: building (cold builds take minutes)"
        start=$(date +%s)
        rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
        # Not inside `if`: errexit must stay in force in the build function.
        local rc=0
        set +e
        (set -e; cd "$(wrapper "$name")" && "build_$name" "$dir.tmp" "$label") >"$CACHE/$name.log" 2>&1
        rc=$?
        set -e
        if [ "$rc" -ne 0 ]; then
            tail -n 30 "$CACHE/$name.log" >&2
            fail "$name $label (full log: $CACHE/$name.log)"
        fi
        echo "$(( $(date +%s) - start ))" > "$dir.tmp/.build-seconds"
        touch "$dir.tmp/.complete"
        rm -rf "$dir" && mv "$dir.tmp" "$dir"
        say "$name $label: built in $(cat "$dir/.build-seconds")s"
    fi
    local f
    for f in "$dir"/*; do
        ln -sfn "$f" "$BIN/$(basename "$f")"
    done
}

build_pulumi() {
    local out=$1 v=$2 sdk
    go build -trimpath -o "$out/pulumi" \
        -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$v" \
        github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
    # The dynamic-provider shim and the program runner ship inside the sdk/v3 module zip.
    sdk=$(module_dir pulumi github.com/pulumi/pulumi/sdk/v3)
    install -m 0755 "$sdk/python/dist/pulumi-resource-pulumi-python" "$out/pulumi-resource-pulumi-python"
    install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" "$out/pulumi-language-python-exec"
}

build_pulumi-kubernetes() {
    local out=$1 v=$2 src work
    src=$(module_dir pulumi-kubernetes github.com/pulumi/pulumi-kubernetes/provider/v4)
    src=$src/cmd/pulumi-resource-kubernetes
    # Build in a scratch copy of the wrapper so the generated embed files never land in the checkout.
    work=$(mktemp -d)
    trap 'rm -rf "$work"' RETURN
    cp go.mod go.sum main.go "$work/"
    python3 - "$src" "$work" "$v" <<'EOF'
import json, sys
src, work, version = sys.argv[1:]
schema = json.load(open(f"{src}/schema.json"))
schema["version"] = version
json.dump(schema, open(f"{work}/schema-embed.json", "w"), separators=(",", ":"))
mapping = json.load(open(f"{src}/terraform-mapping.json"))
json.dump(mapping, open(f"{work}/terraform-mapping-embed.json", "w"), separators=(",", ":"))
EOF
    (cd "$work" && go build -trimpath -o "$out/pulumi-resource-kubernetes" \
        -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$v" .)
}

build_opa() {
    go build -trimpath -o "$1/opa" \
        -ldflags "-s -w -X github.com/open-policy-agent/opa/v1/version.Version=${2#v}" \
        github.com/open-policy-agent/opa
}

build_regal() {
    go build -trimpath -o "$1/regal" -ldflags "-s -w -X github.com/open-policy-agent/regal/pkg/version.Version=$2" \
        github.com/open-policy-agent/regal
}

build_helm() {
    local v=$2 k8s major minor
    k8s=$(pinned helm k8s.io/client-go)   # helm reports the Kubernetes version it was built against
    major=1 minor=$(echo "$k8s" | cut -d. -f2)
    go build -trimpath -o "$1/helm" -ldflags "-s -w \
        -X helm.sh/helm/v3/internal/version.version=$v \
        -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=$major \
        -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$minor \
        -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=$major \
        -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$minor" \
        helm.sh/helm/v3/cmd/helm
}

build_etcd() {
    go build -trimpath -o "$1/etcd" -ldflags "-s -w" go.etcd.io/etcd/server/v3
}

k8s_flags() {
    local v=$1 minor pkg flags
    minor=$(echo "$v" | cut -d. -f2)
    flags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags="$flags -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
    done
    echo "$flags"
}

build_kubernetes() {
    local flags
    flags=$(k8s_flags "$2")
    go build -trimpath -o "$1/kube-apiserver" -ldflags "$flags" k8s.io/kubernetes/cmd/kube-apiserver
    go build -trimpath -o "$1/kube-controller-manager" -ldflags "$flags" k8s.io/kubernetes/cmd/kube-controller-manager
}

# A node of the loopback cluster (greenops/local/node.py): the same pins as the control plane.
build_kubelet() {
    local flags cmd
    flags=$(k8s_flags "$2")
    for cmd in kubelet kube-proxy kube-scheduler; do
        go build -trimpath -o "$1/$cmd" -ldflags "$flags" "k8s.io/kubernetes/cmd/$cmd"
    done
}

# The loopback node's sandbox process (tools/go/pause): no upstream module, our own few lines.
build_pause() {
    go build -trimpath -o "$1/pause" -ldflags "-s -w" .
}

# The loopback node's cluster DNS (tools/go/coredns): CoreDNS with only the plugins it needs.
build_coredns() {
    go build -trimpath -o "$1/coredns" -ldflags "-s -w" .
}

# Prometheus module versions v0.3XX.Y are the releases 3.XX.Y; the release's own number (its VERSION
# file) is what `--version` reports. Built without the `builtinassets` tag: the web UI's assets are
# generated by an npm build and are not in the module zip, so the server has its HTTP API and no UI.
build_prometheus() {
    local out=$1 v=$2 src release flags cmd start
    src=$(module_dir prometheus github.com/prometheus/prometheus)
    release=$(tr -d '[:space:]' < "$src/VERSION")
    if [ "$(echo "$release" | awk -F. '{printf "v0.%d%02d.%d", $1, $2, $3}')" != "$v" ]; then
        echo "prometheus module $v holds release $release, not the one its version names" >&2
        return 1
    fi
    flags="-s -w -X github.com/prometheus/common/version.Version=$release"
    flags="$flags -X github.com/prometheus/common/version.Revision=$v"
    flags="$flags -X github.com/prometheus/common/version.BuildUser=greenops-tools"
    for cmd in prometheus promtool; do
        start=$(date +%s)
        go build -trimpath -o "$out/$cmd" -ldflags "$flags" "github.com/prometheus/prometheus/cmd/$cmd"
        echo "$cmd built in $(( $(date +%s) - start ))s"
    done
}

# cosign signs and verifies the release's artifacts (offline key pair; scripts/release)
build_cosign() {
    go build -trimpath -o "$1/cosign" \
        -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$2" \
        github.com/sigstore/cosign/v3/cmd/cosign
}

# syft writes each image's CycloneDX SBOM (scripts/release)
build_syft() {
    # the tags of syft's own release build: no cgo (gpgme, btrfs) in the container-image readers
    go build -trimpath -tags containers_image_openpgp,exclude_graphdriver_btrfs -o "$1/syft" \
        -ldflags "-s -w -X main.version=${2#v}" github.com/anchore/syft/cmd/syft
}

declare -A LABEL=(
    [pulumi]="$(pinned pulumi github.com/pulumi/pulumi/pkg/v3)"
    [pulumi-kubernetes]="$(sed -n 's/^PULUMI_KUBERNETES_VERSION=//p' "$WRAPPERS/pulumi-kubernetes/VERSION")"
    [opa]="$(pinned opa github.com/open-policy-agent/opa)"
    [regal]="$(pinned regal github.com/open-policy-agent/regal)"
    [helm]="$(pinned helm helm.sh/helm/v3)"
    [etcd]="$(pinned etcd go.etcd.io/etcd/server/v3)"
    [kubernetes]="$(pinned kubernetes k8s.io/kubernetes)"
    [kubelet]="$(pinned kubernetes k8s.io/kubernetes)"
    [pause]="v1"
    [coredns]="$(pinned coredns github.com/coredns/coredns)"
    [prometheus]="$(pinned prometheus github.com/prometheus/prometheus)"
    [cosign]="$(pinned cosign github.com/sigstore/cosign/v3)"
    [syft]="$(pinned syft github.com/anchore/syft)"
)
ORDER=(opa regal helm etcd pulumi pulumi-kubernetes kubernetes kubelet pause coredns prometheus cosign syft)
[ $# -gt 0 ] && ORDER=("$@")

for name in "${ORDER[@]}"; do
    [ -n "${LABEL[$name]:-}" ] || fail "unknown tool '$name' (known: ${!LABEL[*]})"
    build_tool "$name" "${LABEL[$name]}"
done

# No Go module for the official Python language host is served by the module proxy here; a small
# host of our own (greenops/local/langhost.py) lets the CLI run Python programs all the same.
printf '#!/bin/sh\n# Generated by tools/install.sh: the project'"'"'s minimal Pulumi language host for Python.\nexec "%s/.venv/bin/python" -m greenops.local.langhost "$@"\n' \
    "$ROOT" > "$BIN/pulumi-language-python"
chmod 0755 "$BIN/pulumi-language-python"

# The provider plugin goes into the project-local PULUMI_HOME, at the version the Python package pins.
if [[ " ${ORDER[*]} " == *" pulumi-kubernetes "* ]]; then
    # shellcheck source=tools/env.sh
    source "$ROOT/tools/env.sh"
    k8sv=${LABEL[pulumi-kubernetes]#v}
    if ! "$BIN/pulumi" plugin ls 2>/dev/null | grep -qE "^kubernetes +resource +$k8sv "; then
        "$BIN/pulumi" plugin install resource kubernetes "$k8sv" --file "$BIN/pulumi-resource-kubernetes" >/dev/null \
            || fail "installing the kubernetes plugin $k8sv into $PULUMI_HOME"
    fi
fi

say "versions:"
[ -x "$BIN/pulumi" ] && say "  pulumi            $("$BIN/pulumi" version)"
[ -x "$BIN/pulumi-resource-kubernetes" ] && say "  kubernetes plugin ${LABEL[pulumi-kubernetes]}"
[ -x "$BIN/opa" ] && say "  opa               $("$BIN/opa" version | sed -n 's/^Version: //p')"
[ -x "$BIN/helm" ] && say "  helm              $("$BIN/helm" version --short)"
[ -x "$BIN/etcd" ] && say "  etcd              $("$BIN/etcd" --version | sed -n 's/^etcd Version: //p')"
[ -x "$BIN/kube-apiserver" ] && say "  kube-apiserver    $("$BIN/kube-apiserver" --version)"
[ -x "$BIN/kubelet" ] && say "  kubelet           $("$BIN/kubelet" --version)"
[ -x "$BIN/coredns" ] && say "  coredns           $("$BIN/coredns" -version | head -n 1)"
[ -x "$BIN/prometheus" ] && say "  prometheus        $("$BIN/prometheus" --version | head -n 1)"
[ -x "$BIN/promtool" ] && say "  promtool          $("$BIN/promtool" --version | head -n 1)"
exit 0
