"""Engine operations around the program: the Automation API (automation), stale locks, stack
outputs, shards, and the reconcile loop that opens gates and retires runs."""
