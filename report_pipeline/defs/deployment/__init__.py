"""What a deployment configures: resources (local and S3), the IO manager, executors,
partitions, the clock, check thresholds, and the library seams they rely on."""
