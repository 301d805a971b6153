"""The Batch API's own logic: input validation, the batch's states, output lines, and the runner that works
through batches in the background (gateway.api.v1.batches holds its routes)."""
