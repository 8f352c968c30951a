"""Suite-wide settings: property tests are judged on their properties, not on the wall clock of a
shared 2-core CI machine (hypothesis' default 200 ms deadline would make them flaky there)."""

from hypothesis import HealthCheck, settings

settings.register_profile("workbench", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("workbench")
