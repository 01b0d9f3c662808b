"""Use cases: what each RPC does, free of any transport.

A use case takes the ServiceContext and domain messages (the generated
protobuf types are the domain), owns its transactions, returns domain messages
and raises `pioneer_grpc.errors`. The gRPC servicers in `server/` only convert
requests and responses and delegate here; the CLI and tests may call these
directly.

    history.py       threads, appends, turn completion, summaries, token counts
    history_load.py  the budgeted history load, compression under the thread's lock
    load_cache.py    answers of unchanged full loads, one cache per context
    compile.py       prompt compilation and bootstrap seeding
    manifests.py     a turn's manifest, watches, diffs
    turn.py          PrepareTurn: one provider round
"""
