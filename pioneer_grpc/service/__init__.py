"""Use cases: what each RPC does, free of any transport.

A use case takes the ServiceContext and domain messages (the generated
protobuf types are the domain), reaches storage only through the store's port
(`ctx.store`, store/port.py: a round goes down once to open and once to commit),
returns domain messages and raises `pioneer_grpc.errors`. The gRPC servicers in `server/` only convert
requests and responses and delegate here; the CLI and tests may call these
directly.

    context.py             ServiceContext: configuration, the store, the long-lived services
    history.py             threads, appends, turn completion, summaries, token counts
    history_load.py        LoadConversationHistory: read, decide, compress under the thread's lock
    history_compaction.py  compaction of a history over its threshold, as the thread's strategy says
    load_cache.py          answers of unchanged full loads, one cache per context
    load_counts.py         a load's counts in the thread model's tokenizer, stored once counted
    token_fit.py           which tokenizer a thread counts in; what its provider counts for attachments
    listing.py             list threads, a thread's turns and entries, a page at a time
    paging.py              AIP-158 page sizes and opaque page tokens
    compile.py             prompt compilation (and its manifest on a turn), bootstrap seeding
    manifests.py           a turn's manifest, watches, diffs
    provider.py            rendering a ChatRequest for one provider, off the event loop
    turn.py                PrepareTurn: one provider round
    observe.py             span attributes and metrics of a round's steps; a manifest recorded and published
    ending.py              work a cancelled caller cannot cut short (a round's commit and its event)
"""
