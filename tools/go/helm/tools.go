//go:build tools

// Package tools pins the upstream main packages this wrapper module builds.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
