"""Suite-wide settings: property tests are judged on their properties, not on the wall clock of a
shared 2-core CI machine (hypothesis' default 200 ms deadline would make them flaky there), and on
the same generated cases every run (derandomized): the floors that properties which may refuse a
case must reach (test_algebra_props.floored) are measured on those cases, and a landing never
depends on the luck of a draw."""

from hypothesis import HealthCheck, settings

settings.register_profile("workbench", deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("workbench")
