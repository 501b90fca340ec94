"""What a run is told: options, the env file, the lock spec, hosts, declarations and targets."""
