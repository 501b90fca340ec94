"""Where a target runs and what it is: worktree, devcontainer, container resolution, builds, repo facts."""
