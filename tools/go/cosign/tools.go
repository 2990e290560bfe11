//go:build tools

// Package tools pins the upstream main packages this wrapper module builds.
package tools

import _ "github.com/sigstore/cosign/v3/cmd/cosign"
