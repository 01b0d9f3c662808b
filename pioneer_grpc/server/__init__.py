"""The gRPC edge: thin servicers, interceptors, configuration and wiring."""
