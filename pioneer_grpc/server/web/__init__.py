"""The contract over HTTP/JSON (Connect protocol) and the console page, on one ASGI app.

Served by an ASGI server started as a task on the gRPC server's event loop
(serve.py); every RPC goes to the same servicer instances as gRPC, and so to
the same use cases (services.py). edge.py gives each call what the gRPC
interceptors give theirs: request id, bearer auth, canonical errors with
ErrorInfo, access log, metrics and a span.
"""
