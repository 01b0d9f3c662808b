"""ChatRequest -> OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and Gemini bodies.

Pure: no grpc, no database. `render` validates the request (the original's tool
rules first) and returns the exact JSON body, its path and the number of cache
breakpoints placed.
"""

from pioneer_grpc.providers.render import RenderedRequest, render, render_body

__all__ = ["RenderedRequest", "render", "render_body"]
