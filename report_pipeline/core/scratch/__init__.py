"""Private working directories on local disk and the leases that say when they may go."""
