"""Running one command, in a container or on the host, bounded in time and output."""
