"""What every boundary shares, below all of them: the store's key space, typed records and their
JSON at the store's edge, messages between steps, settings, image outcomes and the clock."""
