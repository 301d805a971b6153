"""The gateway's leaf types: plain Python that every layer above may import and that imports no other gateway
package (periods, batch states, API key generation, error types, semantic-cache entries)."""
