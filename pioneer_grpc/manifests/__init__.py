"""Manifest analysis that needs neither the network nor the database."""
