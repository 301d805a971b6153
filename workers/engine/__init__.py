"""The inference engine, one concept per file, in layers:

data       sequence.py, block.py, scheduler_output.py, compute_row.py, ../outputs.py
memory     block_manager.py   (free list, ref counts, chained-hash prefix reuse, LRU eviction,
                               fork + copy-on-write for n > 1)
policy     scheduler.py       (token budget, chunked prefill, preemption, stop tokens, forking n completions)
execution  model_runner.py (tensors, forward, block copies), sampler.py (penalties, min_tokens, logprobs,
                               grammar masks through workers.structured.masker)
speculation spec_decode/     (proposers, the scheduler's planner, the runner's verifier; built on the data,
                               memory and sampler modules above, used by scheduler.py and model_runner.py)
glue       llm_engine.py      (step: schedule, run, update, detokenize), async_engine.py (loop thread)
edges      input_processor.py (validation at submission; structured specs compiled by
                               workers.structured.compiler), output_processor.py + detokenizer.py,
           metrics.py         (prometheus, a collaborator of the engine, not of the scheduler)
"""
