"""The request pipeline every billed endpoint runs (chat, completions, embeddings, semantic-cache hits):

    admit:    authenticate (a dependency) -> route the model -> bound the prompt cheaply -> reserve the worst
              case against RPM, TPM and the month's budget -> count the prompt exactly (off the event loop
              when large) -> validate it against the context
    generate: open the generation on the first version that takes it (or replay a cache hit)
    respond:  collect it whole, or stream it as SSE, metering the budget as tokens flow
    finish:   settle the reservation to what was used, one ledger row, metrics, route feedback

Cheap checks come first: a tenant over its rate limit costs no prompt rendering, no tokenization and no
semantic-cache embedding. Every fault path ends in Run.finish exactly once, so nothing is billed twice or
lost, whatever way the request ends (a client gone mid-stream, a replica lost, a timeout)."""
