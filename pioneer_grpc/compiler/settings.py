"""What a server sets for all its compiles: the persona, and how bootstrap headings name the home.

The persona is the Identity section's text, the first stable section; a request
replaces it with `persona` or leaves the section out with `omit_persona`. While
the built-in persona is in effect, SOUL.md and IDENTITY.md are read too; another
persona is a team's own identity, and they are not (unless `identity_files` or
the request's field says to read them).

A bootstrap heading names its file relative to the runtime home it lies in,
`### SOUL.md (~/.pioneer/SOUL.md)`, not by the home's absolute path: two
replicas whose homes lie at different paths then render the same files to the
same stable text, so they share a stable fingerprint and a provider's prefix
cache. The first home is shown as `home_label`; each extra home as its label in
`extra_home_labels` when one is given, else as its absolute path.
"""

from __future__ import annotations

from dataclasses import dataclass

from pioneer_grpc.compiler.render.policies import IDENTITY_BASE

DEFAULT_HOME_LABEL = "~/.pioneer"


@dataclass(frozen=True)
class CompileSettings:
    # The Identity section's text when a request sets none; empty leaves the section out.
    persona: str = IDENTITY_BASE
    # Recorded as the Identity section's source when set (the persona file, say); the built-in has none.
    persona_source: str = ""
    # How headings name the first runtime home.
    home_label: str = DEFAULT_HOME_LABEL
    # How headings name the extra runtime homes, in order; a home without a label shows its path.
    extra_home_labels: tuple[str, ...] = ()
    # Whether SOUL.md and IDENTITY.md are read when a request does not say (identity_files):
    # None reads them only while the built-in persona is in effect.
    identity_files: bool | None = None

    def home_labels(self) -> tuple[str, ...]:
        return (self.home_label, *self.extra_home_labels)


DEFAULT_SETTINGS = CompileSettings()
