// The sandbox ("pause") process of the loopback node's pods (greenops/local/node.py): it holds
// the pod's namespaces and reaps what dies in them. registry.k8s.io is out of reach here, so the
// sandbox image is built from this.
module greenops-tools/pause

go 1.26.0
