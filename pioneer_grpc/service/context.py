"""What every use case is given: configuration, the store, and the long-lived services.

One context per running server, built by `server/app.py` (or by a test). What
depends on a server's data (kept histories, compiled prompts) lives here, so two
servers in one process never share answers. A few pure results are remembered at
module level and shared by every server in the process, each keyed by everything
it depends on (Remembered, pioneer_grpc/remembered.py): request heads and compile
inputs known valid, manifests' JSON fields, counted stable prompts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from pioneer_grpc.adapters.count_tokens import ProviderTokenCounter
from pioneer_grpc.compiler.cache import CompileCache
from pioneer_grpc.config import Config
from pioneer_grpc.events.hub import ManifestHub
from pioneer_grpc.history.summarizers import Summarizer
from pioneer_grpc.models.registry import Registry, packaged_registry
from pioneer_grpc.service.import_buffers import ImportBuffers
from pioneer_grpc.service.kept_texts import KeptTexts
from pioneer_grpc.service.load_cache import LoadCache
from pioneer_grpc.service.prefix_breaks import RoundPrefixes
from pioneer_grpc.service.recent_rounds import RecentRounds
from pioneer_grpc.service.token_fit import SeenModels
from pioneer_grpc.store.port import Store
from pioneer_grpc.telemetry import Telemetry
from pioneer_grpc.tenants import Quota, current_caller


@dataclass
class ServiceContext:
    config: Config
    # Every read and write of the use cases (store/port.py): SQLite, PostgreSQL, or in memory, as
    # opened (the default tenant's view). A use case reaches it through `store`, its caller's view.
    root_store: Store
    # Fan-out of manifest events to live observers: each committed event is handed to it.
    hub: ManifestHub
    summarizer: Summarizer
    # Compiled prompts of recent inputs, reused while nothing they read has changed; compiles
    # with the configured persona and home labels.
    compile_cache: CompileCache = field(init=False)
    # Answers of recent full-history loads, reused while the thread's history state is unchanged.
    load_cache: LoadCache = field(default_factory=LoadCache)
    # Each thread's model as this server's last append or round found it: what to count new entries in.
    seen_models: SeenModels = field(default_factory=SeenModels)
    # What made each thread's last round's body, for the next round's PrefixBreak.
    round_prefixes: RoundPrefixes = field(default_factory=RoundPrefixes)
    # Each thread's last round here, for the usage a loop reports of it with its next call.
    recent_rounds: RecentRounds = field(default_factory=RecentRounds)
    # Per thread, the section fingerprints whose texts the store keeps (service/section_texts.py).
    kept_texts: KeptTexts = field(default_factory=KeptTexts)
    # The bytes the imports under way hold while they read their streams, bounded across them.
    import_buffers: ImportBuffers = field(default_factory=ImportBuffers)
    # What the server knows of each model (window, output limit, tokenizer, cache minimum).
    models: Registry = field(default_factory=packaged_registry)
    # The providers' count-tokens endpoints that have a key configured (none: estimates only).
    token_counter: ProviderTokenCounter | None = None
    # Spans and metrics; inert unless the server was started with them.
    telemetry: Telemetry = field(default_factory=Telemetry)
    # Each tenant's caps on threads and stored bytes (the tenants file in effect; None: no cap).
    quota_of: Callable[[str], Quota | None] = lambda tenant: None
    # Run in reverse order when the server stops (after RPCs drained).
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.compile_cache = CompileCache(settings=self.config.compile_settings())

    @property
    def store(self) -> Store:
        """The store as the call's tenant sees it (service/tenancy.py): another tenant's threads are
        not in it."""
        return self.root_store.of_tenant(current_caller().tenant)
