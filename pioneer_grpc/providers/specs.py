"""Every provider API the server renders for, by Provider enum value (providers/spec.py).

Each module of `pioneer_grpc.providers.apis` renders one API and declares its spec
as `SPEC`; they are found here by walking that package, so adding a provider edits
no list. A Provider enum value without a module is in REFUSED, with the reason.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from types import ModuleType

from pioneer_grpc.providers import apis
from pioneer_grpc.providers.spec import ProviderSpec
from pioneer_grpc.v1 import provider_service_pb2


def specs_in(package: ModuleType) -> dict[int, ProviderSpec]:
    """The SPEC of every module of `package`, by provider; a module without one, or two modules
    for one provider, is an error at import (a server never starts half-specified)."""
    found: dict[int, tuple[str, ProviderSpec]] = {}
    for module in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
        spec = getattr(importlib.import_module(module.name), "SPEC", None)
        if not isinstance(spec, ProviderSpec):
            raise TypeError(f"{module.name} declares no SPEC (a ProviderSpec)")
        if spec.provider in found:
            first = found[spec.provider][0]
            raise ValueError(f"{module.name} and {first} both specify provider {spec.provider}")
        found[spec.provider] = (module.name, spec)
    return {provider: found[provider][1] for provider in sorted(found)}


SPECS: Mapping[int, ProviderSpec] = specs_in(apis)
# Provider enum values no renderer stands behind, and why.
REFUSED: Mapping[int, str] = {
    provider_service_pb2.PROVIDER_UNSPECIFIED: "must name a provider API",
}
BY_NAME: Mapping[str, ProviderSpec] = {spec.name: spec for spec in SPECS.values()}


def spec_for(provider: int) -> ProviderSpec | None:
    return SPECS.get(provider)
