"""External model servers behind catalogue versions (`upstreams:` in the catalogue): OpenAI-protocol servers
(vLLM, llama.cpp, SGLang, hosted APIs) and Anthropic-protocol ones. Inside this package the common currency is
OpenAI's wire format (dicts): an OpenAI upstream is nearly a pass-through, an Anthropic one is translated
(gateway/upstreams/anthropic_wire.py). The backend (backend.UpstreamBackend) turns those chunks into the
gateway's GenerationChunks, so the pipeline serves upstream versions exactly like pool ones."""
