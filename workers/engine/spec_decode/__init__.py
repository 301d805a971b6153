"""Speculative decoding: a cheap proposer guesses the next k tokens of a sequence, the target model checks all
of them in one forward pass over the paged cache, and the step keeps the accepted ones plus one token of its
own. Greedy output is the target's, token for token; sampled output keeps the target's distribution
(rejection sampling).

- workers/speculative_config.py: SpeculativeConfig (EngineConfig.speculative).
- ngram.py: prompt lookup, the proposer without a model (runs in the scheduler, on token ids).
- draft_model.py: a small Llama (or the target's first layers) proposing, run by the model runner.
- adaptive.py: who drafts this step and how many (batch size, per-sequence acceptance, limits, opt-outs).
- planner.py: the scheduler's side: reserves the draft slots, keeps the accepted tokens, rolls back the rest.
- rejection.py: verification arithmetic (greedy and rejection sampling), pure torch.
- verifier.py: the runner's side: target logits at every drafted position -> the tokens a step keeps.
"""
