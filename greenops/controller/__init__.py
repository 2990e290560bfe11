"""The cluster path's controller: it follows VmTemplates on the API server and keeps the scheduler's
record of them true (holds confirmed or expired, the lifecycle from the operators' conditions,
releases on observed deletion), acting only while it holds the leader Lease."""
