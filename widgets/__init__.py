"""Interactive layout views and their deterministic SVG renderer."""
