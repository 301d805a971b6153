"""Structured output: a request's output held to a JSON schema, a regex or a grammar at decode time.

spec.py       StructuredOutput: what a request asks for (plain data; the replica wire's `structured` dict)
compiler.py   GrammarCompiler: spec -> llguidance grammar for the engine's tokenizer, at submission, cached
masker.py     GrammarMasker: each completion's matcher; the step's token bitmask (the sampler's collaborator)
bitmask.py    a bitmask applied to rows of logits on their device

Only spec.py loads with `workers.structured`: llguidance is imported by the compiler and the masker.
"""
from workers.structured.spec import StructuredOutput

__all__ = ["StructuredOutput"]
