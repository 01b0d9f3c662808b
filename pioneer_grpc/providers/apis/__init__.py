"""One module per provider API: its renderer, and its `ProviderSpec` as the module's `SPEC`.

providers/specs.py finds every module of this package: a provider is added by adding
its module here (and its tests), with no list to edit.
"""
