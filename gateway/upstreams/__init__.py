"""Model servers outside the pool: external OpenAI- and Anthropic-protocol APIs."""
