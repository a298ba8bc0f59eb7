"""What the engine's processes say to each other: typed records and the one codec."""
