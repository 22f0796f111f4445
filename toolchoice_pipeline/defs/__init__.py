"""The Dagster layer: it wires the pure core into assets, checks, resources, partitions, schedules and sensors."""
