"""From sequences after a step to RequestOutputs: detokenization, stop strings, deltas, n completions."""
from __future__ import annotations

from dataclasses import dataclass, field

from workers.engine.detokenizer import Decoder, IncrementalDetokenizer
from workers.engine.scheduler_output import SchedulerOutput
from workers.engine.sequence import Sequence
from workers.outputs import CompletionOutput, RequestMetrics, RequestOutput
from workers.sampling_params import SamplingParams


@dataclass(slots=True)
class _CompletionState:
    detokenizer: IncrementalDetokenizer
    seq: Sequence | None = None  # None until the parent's first sample forks this completion
    num_detokenized: int = 0  # output tokens fed to the detokenizer
    num_sent_tokens: int = 0  # output tokens already in an output (delta mode)
    num_sent_chars: int = 0
    sent_final: bool = False  # its finish_reason went out (delta mode: it appears no more)

    @property
    def finished(self) -> bool:
        return self.seq is not None and self.seq.is_finished


@dataclass(slots=True)
class _RequestState:
    head: Sequence  # completion 0, which carries the request's stamps
    prompt: str | None
    prompt_token_ids: list[int]
    completions: list[_CompletionState] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return all(c.finished for c in self.completions)


class OutputProcessor:
    def __init__(self, tokenizer: Decoder, *, deltas: bool) -> None:
        self.tokenizer = tokenizer
        self.deltas = deltas
        self._states: dict[str, _RequestState] = {}

    def add(self, seq: Sequence, prompt: str | None) -> None:
        prompt_ids = seq.token_ids[:seq.num_prompt_tokens]
        p = seq.params
        completions = [_CompletionState(IncrementalDetokenizer(self.tokenizer, p.stop, prompt_ids,
                                                               p.skip_special_tokens, min_tokens=p.min_tokens,
                                                               include_stop=p.include_stop_str_in_output))
                       for _ in range(p.n)]
        completions[0].seq = seq
        self._states[seq.request_id] = _RequestState(seq, prompt, prompt_ids, completions)

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._states

    def detokenize(self, out: SchedulerOutput) -> list[Sequence]:
        """Decode the step's new tokens (children forked this step included); returns sequences a stop
        string has just ended."""
        for child in out.forked:
            self._states[child.request_id].completions[child.index].seq = child
        stopped = [s.seq for s in out.scheduled if self._detokenize(s.seq)]
        return stopped + [child for child in out.forked if self._detokenize(child)]

    def make_outputs(self, out: SchedulerOutput) -> list[RequestOutput]:
        """One output per request that gained tokens or finished this step."""
        outputs = []
        seen: set[str] = set()
        for s in out.scheduled:
            rid = s.seq.request_id
            if rid in seen:
                continue
            seen.add(rid)
            state = self._states[rid]
            if any(c.seq is not None and ((c.seq.is_finished and not c.sent_final)
                                          or c.seq.num_output_tokens > c.num_sent_tokens)
                   for c in state.completions):
                outputs.append(self._output(state))
        return outputs

    def abort(self, request_id: str) -> RequestOutput | None:
        """The final output of a request the scheduler has just aborted (None if unknown)."""
        state = self._states.get(request_id)
        return None if state is None else self._output(state, aborted=True)

    def _detokenize(self, seq: Sequence) -> bool:
        c = self._states[seq.request_id].completions[seq.index]
        start = seq.num_prompt_tokens + c.num_detokenized
        new_ids = seq.token_ids[start:]
        c.num_detokenized += len(new_ids)
        if seq.finish_reason == "stop" and new_ids and not seq.params.include_stop_str_in_output:
            new_ids = new_ids[:-1]  # a stop token (eos, stop_token_ids) ends the text unseen
        if len(new_ids) > 1 and seq.params.stop:
            stopped = self._update_each(seq, c, new_ids, start)
        else:
            stopped = c.detokenizer.update(new_ids)
        if seq.is_finished and not stopped:
            c.detokenizer.flush()
            stopped = c.detokenizer.stopped
        return stopped

    @staticmethod
    def _update_each(seq: Sequence, c: _CompletionState, new_ids: list[int], start: int) -> bool:
        """Several tokens in one step (speculative decoding) with stop strings: feed them one at a time, and
        when a stop string ends the text, drop the tokens after it from the sequence, which is about to finish:
        one token a step would never have generated them (nor counted them in usage)."""
        for j, token in enumerate(new_ids):
            if c.detokenizer.update([token]):
                end = start + j + 1
                dropped = len(seq.token_ids) - end
                if dropped > 0:
                    del seq.token_ids[end:]
                    # Without kept logprobs the cumulative one cannot be corrected: such requests draft with
                    # stop strings only when n == 1, where nothing reads it (spec_decode.adaptive.can_draft).
                    if seq.params.logprobs is not None:
                        seq.cumulative_logprob -= sum(lp.logprob for lp in seq.output_logprobs[-dropped:])
                        del seq.output_logprobs[-dropped:]
                    c.num_detokenized = seq.num_output_tokens
                return True
        return False

    def _output(self, state: _RequestState, aborted: bool = False) -> RequestOutput:
        completions = []
        for index, c in enumerate(state.completions):
            if self.deltas and c.sent_final:
                continue
            completion = self._completion(index, c, state.head.params)
            if not self.deltas or completion.token_ids or completion.finish_reason or completion.text:
                completions.append(completion)
        finished = aborted or state.finished
        head = state.head
        if finished:
            del self._states[head.request_id]
        seqs = [c.seq for c in state.completions if c.seq is not None]
        ends = [s.finished_time for s in seqs if s.finished_time is not None]
        metrics = RequestMetrics(head.arrival_time, head.first_scheduled_time, head.first_token_time,
                                 max(ends) if finished and ends else None)
        return RequestOutput(head.request_id, state.prompt, state.prompt_token_ids, completions, finished,
                             sum(s.num_output_tokens for s in seqs), head.num_cached_tokens, metrics,
                             num_reserved_tokens=sum(s.num_reserved_tokens for s in seqs))

    def _completion(self, index: int, c: _CompletionState, params: SamplingParams) -> CompletionOutput:
        seq = c.seq
        if seq is None:  # never forked: its request was aborted before the first token
            c.sent_final = True
            return CompletionOutput(index, "", [], "abort", [] if params.logprobs is not None else None,
                                    0.0 if params.wants_logprob else None)
        finished = seq.is_finished
        text = visible = c.detokenizer.visible_text(finished)
        start = c.num_sent_tokens if self.deltas else 0
        token_ids = seq.token_ids[seq.num_prompt_tokens + start:]
        if self.deltas:
            text = visible[c.num_sent_chars:]
        c.num_sent_chars, c.num_sent_tokens = len(visible), seq.num_output_tokens
        c.sent_final = finished
        logprobs = seq.output_logprobs[start:] if params.logprobs is not None else None
        cumulative = seq.cumulative_logprob if params.wants_logprob else None
        return CompletionOutput(index, text, token_ids, seq.finish_reason if finished else None, logprobs, cumulative)

