"""What the suites share, apart from fixtures (those stay in conftest.py files): stand-ins for
parts that cannot run here (the scheduler stand-in of policy tests, the cloud-plugin stand-in),
builders (stacks on the real engine, declared objects, principals, admission reviews) and checkers
(Pod Security, references between objects, upstream CRDs, Prometheus rules)."""
