"""From sequences after a step to RequestOutputs: detokenization, stop strings, deltas."""
from __future__ import annotations

from dataclasses import dataclass

from workers.engine.detokenizer import Decoder, IncrementalDetokenizer
from workers.engine.scheduler_output import SchedulerOutput
from workers.engine.sequence import Sequence
from workers.outputs import CompletionOutput, RequestMetrics, RequestOutput


@dataclass(slots=True)
class _RequestState:
    seq: Sequence
    prompt: str | None
    prompt_token_ids: list[int]
    detokenizer: IncrementalDetokenizer
    num_detokenized: int = 0  # output tokens fed to the detokenizer
    num_sent_tokens: int = 0  # output tokens already in an output (delta mode)
    num_sent_chars: int = 0


class OutputProcessor:
    def __init__(self, tokenizer: Decoder, *, deltas: bool) -> None:
        self.tokenizer = tokenizer
        self.deltas = deltas
        self._states: dict[str, _RequestState] = {}

    def add(self, seq: Sequence, prompt: str | None) -> None:
        prompt_ids = seq.token_ids[:seq.num_prompt_tokens]
        detok = IncrementalDetokenizer(self.tokenizer, seq.params.stop, prompt_ids)
        self._states[seq.request_id] = _RequestState(seq, prompt, prompt_ids, detok)

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._states

    def detokenize(self, out: SchedulerOutput) -> list[Sequence]:
        """Decode the step's new tokens; returns sequences a stop string has just ended."""
        return [s.seq for s in out.scheduled if self._detokenize(self._states[s.seq.request_id])]

    def make_outputs(self, out: SchedulerOutput) -> list[RequestOutput]:
        """One output per request that gained tokens or finished this step."""
        outputs = []
        for s in out.scheduled:
            state = self._states[s.seq.request_id]
            if s.seq.is_finished or s.seq.num_output_tokens > state.num_sent_tokens:
                outputs.append(self._output(state))
        return outputs

    def abort(self, seq: Sequence) -> RequestOutput | None:
        state = self._states.get(seq.request_id)
        return None if state is None else self._output(state)

    def _detokenize(self, state: _RequestState) -> bool:
        seq = state.seq
        new_ids = seq.token_ids[seq.num_prompt_tokens + state.num_detokenized:]
        state.num_detokenized += len(new_ids)
        if seq.finish_reason == "stop" and new_ids:
            new_ids = new_ids[:-1]  # a stop token (eos, stop_token_ids) ends the text unseen
        stopped = state.detokenizer.update(new_ids)
        if seq.is_finished and not stopped:
            state.detokenizer.flush()
            stopped = state.detokenizer.stopped
        return stopped

    def _output(self, state: _RequestState) -> RequestOutput:
        seq, finished = state.seq, state.seq.is_finished
        text = visible = state.detokenizer.visible_text(finished)
        token_ids = seq.token_ids[seq.num_prompt_tokens + (state.num_sent_tokens if self.deltas else 0):]
        if self.deltas:
            text = visible[state.num_sent_chars:]
        state.num_sent_chars, state.num_sent_tokens = len(visible), seq.num_output_tokens
        if finished:
            del self._states[seq.request_id]
        completion = CompletionOutput(0, text, token_ids, seq.finish_reason if finished else None)
        metrics = RequestMetrics(seq.arrival_time, seq.first_scheduled_time, seq.first_token_time,
                                 seq.finished_time)
        return RequestOutput(seq.request_id, state.prompt, state.prompt_token_ids, [completion], finished,
                             seq.num_output_tokens, seq.num_cached_tokens, metrics)
