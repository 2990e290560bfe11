// Command pulumi-resource-kubernetes serves the upstream provider. Upstream's own main embeds two
// JSON files that are generated at release time and absent from the module zip; the install script
// generates them next to this file (schema with its version set), and this main embeds them.
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var schema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, schema, terraformMapping)
}
