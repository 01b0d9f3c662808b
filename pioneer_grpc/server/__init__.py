"""The gRPC edge: servicers that convert and delegate to `service/`, interceptors, wiring.

app.py           builds the ServiceContext, registers every servicer (SERVICES), health, reflection
interceptors.py  bearer-token auth and the one mapping of domain errors to statuses
errors.py        domain error -> google.rpc.Status with ErrorInfo and BadRequest
servicers/       one module per service of the contract
"""
