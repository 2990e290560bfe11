// CoreDNS with the few plugins the loopback node's cluster DNS needs (greenops/local/node.py):
// the cluster domain served from the API server's Services and EndpointSlices.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	_ "github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// the order the plugins handle a query in (CoreDNS's own plugin.cfg order)
func init() {
	dnsserver.Directives = []string{"bind", "ready", "health", "errors", "kubernetes"}
}

func main() {
	coremain.Run()
}
