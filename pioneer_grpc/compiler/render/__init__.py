"""Renderers: structured inputs and built-in policies turned into section text."""
