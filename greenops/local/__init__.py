"""Local, loopback-only stand-ins for a cluster and its tools."""
