"""pioneer-grpc: the prompt-and-context layer of an agent gateway, as a gRPC service."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pioneer-grpc")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+source"
