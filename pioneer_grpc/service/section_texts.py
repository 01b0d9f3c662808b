"""Each compiled section's text kept by its fingerprint, once per thread, for DiffManifests' lines.

A PrepareTurn round's commit carries the texts of its sections this server has not kept for the
thread (one transaction: the round's own); a CompilePrompt keeps them after recording its manifest.
This server remembers, per thread, the fingerprints it has kept already, so a round whose sections
are all known writes nothing more. A text is written the first time a thread's compile produces it
(the store keeps it once: store/section_texts.py). The memory is per process and bounded: after a restart, on
another worker, or once the thread fell out of it, the next round writes its texts again, which the
store ignores as already kept. A round cancelled or failed before its texts are kept leaves them
unknown here, so the next round writes them.
"""

from __future__ import annotations

from collections.abc import Iterable

from pioneer_grpc.service.context import ServiceContext
from pioneer_grpc.service.tenancy import thread_key
from pioneer_grpc.v1 import prompt_pb2


def unknown(
    ctx: ServiceContext, thread_id: str, sections: Iterable[prompt_pb2.PromptSection]
) -> tuple[tuple[str, str], ...]:
    """(fingerprint, text) of the sections the thread is not known to have kept: for the round's
    commit to keep (RoundCommit.texts); empty, and nothing written, when all are known."""
    return tuple(ctx.kept_texts.unknown(thread_key(thread_id), sections).items())


def kept(ctx: ServiceContext, thread_id: str, texts: tuple[tuple[str, str], ...]) -> None:
    """The round's commit kept `texts`: known from now on."""
    if texts:
        ctx.kept_texts.mark(thread_key(thread_id), (fingerprint for fingerprint, _ in texts))


async def keep(ctx: ServiceContext, thread_id: str, sections: Iterable[prompt_pb2.PromptSection]) -> None:
    """Keeps the texts of the round's sections the thread has not kept yet (nothing when all are)."""
    texts = ctx.kept_texts.unknown(thread_key(thread_id), sections)
    if texts:
        await ctx.store.manifests.keep_texts(thread_id, texts)
        ctx.kept_texts.mark(thread_key(thread_id), texts)
