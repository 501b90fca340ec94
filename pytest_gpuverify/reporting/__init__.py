"""Where CI users look: GitHub job summaries and annotations, merged shards, an HTML report."""
