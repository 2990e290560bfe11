"""Engine operations around the program: the Automation API (automation), one run per stack
(stack_lock), stale locks, stack outputs, shards, and the reconcile loop that opens gates and
retires runs."""
