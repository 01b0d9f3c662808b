"""Generated protobuf and gRPC stubs of pioneer.v1 (regenerate with `make proto`)."""
