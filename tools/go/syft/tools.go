//go:build tools

// Package tools pins the upstream main packages this wrapper module builds.
package tools

import _ "github.com/anchore/syft/cmd/syft"
