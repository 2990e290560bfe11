"""The Pulumi program and its configuration: what `pulumi up` runs (program), the stack's
``greenops:*`` config validated once at the edge (config), workload and stack files, and the inline
config the Pulumi Kubernetes Operator hands the program."""
